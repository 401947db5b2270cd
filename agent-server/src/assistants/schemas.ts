import { z } from "zod";
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
import type { Assistant, AssistantVersion } from "../storage/types.ts";

export const AssistantSchema: z.ZodType<Assistant> = z
  .object({
    assistant_id: z.uuid(),
    graph_id: z.string(),
    config: JsonObjectSchema,
    context: JsonObjectSchema,
    metadata: JsonObjectSchema,
    version: z.number().int(),
    name: z.string(),
    description: z.string().nullable(),
    created_at: TimestampSchema,
    updated_at: TimestampSchema,
  })
  .register(apiSchemas, { id: "Assistant" });

export const AssistantVersionSchema: z.ZodType<AssistantVersion> = z
  .object({
    assistant_id: z.uuid(),
    version: z.number().int(),
    graph_id: z.string(),
    config: JsonObjectSchema,
    context: JsonObjectSchema,
    metadata: JsonObjectSchema,
    name: z.string(),
    description: z.string().nullable(),
    created_at: TimestampSchema,
  })
  .register(apiSchemas, { id: "AssistantVersion" });

export const ASSISTANT_FIELDS = [
  "assistant_id",
  "graph_id",
  "config",
  "context",
  "metadata",
  "version",
  "name",
  "description",
  "created_at",
  "updated_at",
] as const;

export const AssistantCreateSchema = z
  .object({
    assistant_id: optional(z.uuid()),
    graph_id: z.string().min(1),
    config: optional(JsonObjectSchema),
    context: optional(JsonObjectSchema),
    metadata: optional(MetadataSchema),
    name: optional(z.string()),
    description: z.string().nullish(),
    if_exists: optional(IfExistsSchema),
  })
  .register(apiSchemas, { id: "AssistantCreate" });

export const AssistantPatchSchema = z
  .object({
    graph_id: optional(z.string().min(1)),
    config: optional(JsonObjectSchema),
    context: optional(JsonObjectSchema),
    metadata: optional(MetadataSchema),
    name: optional(z.string()),
    description: z.string().nullish(),
  })
  .register(apiSchemas, { id: "AssistantPatch" });

const assistantFilterFields = {
  metadata: optional(MetadataSchema),
  graph_id: optional(z.string()),
  name: optional(z.string()),
};

export const AssistantCountSchema = z.object(assistantFilterFields).register(apiSchemas, { id: "AssistantCount" });

export const AssistantSearchSchema = z
  .object({
    ...assistantFilterFields,
    limit: LimitSchema,
    offset: OffsetSchema,
    sort_by: z.enum(["assistant_id", "graph_id", "name", "created_at", "updated_at"]).default("created_at"),
    sort_order: SortOrderSchema.default("desc"),
    select: optional(z.array(z.enum(ASSISTANT_FIELDS)).min(1)),
  })
  .register(apiSchemas, { id: "AssistantSearchRequest" });

export const AssistantVersionsSchema = z
  .object({
    metadata: optional(MetadataSchema),
    limit: LimitSchema,
    offset: OffsetSchema,
  })
  .register(apiSchemas, { id: "AssistantVersionsRequest" });

const VersionNumber = z.coerce.number().int().min(1);

/** SDKs send `{version}` as JSON; the SPEC documents `?version=`: both are accepted. */
export const AssistantLatestBodySchema = z.object({ version: optional(VersionNumber) });
export const AssistantLatestQuerySchema = z.object({ version: optional(VersionNumber) });

export const AssistantDeleteQuerySchema = z.object({
  delete_threads: z
    .enum(["true", "false", "1", "0"])
    .optional()
    .transform((value) => value === "true" || value === "1"),
});

/** Assistant paths take a uuid or a graph id (mapped to the graph's default assistant). */
export const AssistantPathSchema = z.object({ assistant_id: z.string().min(1) });
