import { z } from "zod";
import { CommandSchema } from "../runs/schemas.ts";
import {
  IfExistsSchema,
  JsonObjectSchema,
  LimitSchema,
  MetadataSchema,
  OffsetSchema,
  optional,
  SortOrderSchema,
  TimestampSchema,
} from "../schemas/common.ts";
import { apiSchemas } from "../schemas/registry.ts";
import type { Thread } from "../storage/types.ts";
import { ThreadTtlSchema, ThreadTtlStrategySchema } from "./ttl.ts";

export const ThreadStatusSchema = z.enum(["idle", "busy", "interrupted", "error"]);

const InterruptSchema = z.object({ id: z.string().optional(), value: z.unknown() });

export const ThreadSchema: z.ZodType<Thread> = z
  .object({
    thread_id: z.uuid(),
    created_at: TimestampSchema,
    updated_at: TimestampSchema,
    state_updated_at: TimestampSchema,
    metadata: JsonObjectSchema,
    status: ThreadStatusSchema,
    config: JsonObjectSchema,
    values: JsonObjectSchema.nullable(),
    interrupts: z.record(z.string(), z.array(InterruptSchema)),
    ttl: z
      .object({ strategy: ThreadTtlStrategySchema, ttl_minutes: z.number(), expires_at: TimestampSchema.nullable() })
      .optional()
      .describe("Only with `?include=ttl`, on threads that have a TTL"),
  })
  .register(apiSchemas, { id: "Thread" });

export const THREAD_FIELDS = [
  "thread_id",
  "created_at",
  "updated_at",
  "state_updated_at",
  "metadata",
  "config",
  "status",
  "values",
  "interrupts",
] as const;

export const SuperstepSchema = z.object({
  updates: z.array(
    z.object({
      values: z.union([JsonObjectSchema, z.array(z.unknown())]).nullish(),
      command: CommandSchema.nullish(),
      as_node: z.string().min(1),
    }),
  ),
});
export type Superstep = z.output<typeof SuperstepSchema>;

export const ThreadCreateSchema = z
  .object({
    thread_id: optional(z.uuid()),
    metadata: optional(MetadataSchema),
    if_exists: optional(IfExistsSchema),
    supersteps: optional(z.array(SuperstepSchema)),
    ttl: optional(ThreadTtlSchema),
  })
  .register(apiSchemas, { id: "ThreadCreate" });

export const ThreadPatchSchema = z
  .object({
    metadata: optional(MetadataSchema),
    ttl: ThreadTtlSchema.nullable().optional().describe("A new TTL, counted from now; null removes the thread's TTL"),
  })
  .register(apiSchemas, { id: "ThreadPatch" });

export const ThreadGetQuerySchema = z.object({
  include: optional(z.union([z.literal("ttl"), z.array(z.literal("ttl"))])).describe("`ttl` adds the thread's TTL"),
});

const threadFilterFields = {
  ids: optional(z.array(z.uuid()).max(1000)),
  metadata: optional(MetadataSchema),
  values: optional(JsonObjectSchema),
  status: optional(ThreadStatusSchema),
};

export const ThreadCountSchema = z.object(threadFilterFields).register(apiSchemas, { id: "ThreadCountRequest" });

export const ThreadSearchSchema = z
  .object({
    ...threadFilterFields,
    limit: LimitSchema,
    offset: OffsetSchema,
    sort_by: z.enum(["thread_id", "status", "created_at", "updated_at", "state_updated_at"]).default("created_at"),
    sort_order: SortOrderSchema.default("desc"),
    select: optional(z.array(z.enum(THREAD_FIELDS)).min(1)),
  })
  .register(apiSchemas, { id: "ThreadSearchRequest" });

export const ThreadPruneSchema = z
  .object({
    thread_ids: z.array(z.uuid()).max(1000),
    strategy: ThreadTtlStrategySchema.default("delete"),
  })
  .register(apiSchemas, { id: "ThreadPruneRequest" });

export const ThreadPruneResponseSchema = z
  .object({ pruned_count: z.number().int() })
  .register(apiSchemas, { id: "ThreadPruneResponse" });

export const ThreadPathSchema = z.object({ thread_id: z.uuid() });
