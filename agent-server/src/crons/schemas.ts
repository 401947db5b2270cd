import { z } from "zod";
import { RunCreateStatefulSchema } from "../runs/schemas.ts";
import { JsonObjectSchema, MetadataSchema, optional, TimestampSchema } from "../schemas/common.ts";
import { apiSchemas } from "../schemas/registry.ts";

/** Request and response shapes of the cron endpoints: one zod schema per shape (validation, types, OpenAPI). */

/** The run settings a cron passes to every run it starts (its `payload`). */
const RunPayloadSchema = RunCreateStatefulSchema.pick({
  input: true,
  command: true,
  config: true,
  context: true,
  webhook: true,
  interrupt_before: true,
  interrupt_after: true,
  stream_mode: true,
  stream_subgraphs: true,
  stream_resumable: true,
  durability: true,
  checkpoint_during: true,
  multitask_strategy: true,
  if_not_exists: true,
});
export type CronRunPayload = z.infer<typeof RunPayloadSchema>;
export const RUN_PAYLOAD_FIELDS = Object.keys(RunPayloadSchema.shape) as (keyof CronRunPayload)[];

export const OnRunCompletedSchema = z.enum(["delete", "keep"]);

const cronFields = {
  schedule: z.string().min(1).describe("5-field cron expression (minute hour day month weekday)"),
  timezone: optional(z.string().min(1)).describe("IANA timezone the schedule is read in (default UTC)"),
  end_time: optional(TimestampSchema).describe("No run starts after this time"),
  enabled: optional(z.boolean()),
  metadata: optional(MetadataSchema).describe("Stored on the cron and copied into each run's metadata"),
};

export const CronCreateSchema = RunPayloadSchema.extend({
  assistant_id: z.string().min(1).describe("Assistant uuid or graph id"),
  ...cronFields,
  on_run_completed: optional(OnRunCompletedSchema).describe(
    "Stateless crons: delete (default) or keep each run's new thread",
  ),
}).register(apiSchemas, { id: "CronCreate" });
export type CronCreate = z.infer<typeof CronCreateSchema>;

export const CronPatchSchema = RunPayloadSchema.partial()
  .extend({
    schedule: cronFields.schedule.optional(),
    timezone: cronFields.timezone,
    end_time: TimestampSchema.nullable().optional().describe("null clears it; omitted leaves it unchanged"),
    enabled: cronFields.enabled,
    metadata: optional(MetadataSchema).describe("Merged into the cron's metadata"),
    on_run_completed: optional(OnRunCompletedSchema),
  })
  .register(apiSchemas, { id: "CronPatch" });
export type CronPatch = z.infer<typeof CronPatchSchema>;

export const CronSchema = z
  .object({
    cron_id: z.string(),
    assistant_id: z.string(),
    thread_id: z.string().nullable(),
    on_run_completed: OnRunCompletedSchema.nullable(),
    end_time: z.string().nullable(),
    schedule: z.string(),
    timezone: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    payload: JsonObjectSchema,
    user_id: z.string().nullable(),
    next_run_date: z.string().nullable(),
    metadata: JsonObjectSchema,
    enabled: z.boolean(),
  })
  .register(apiSchemas, { id: "Cron" });
export type Cron = z.infer<typeof CronSchema>;

export const CronSortBySchema = z.enum([
  "cron_id",
  "assistant_id",
  "thread_id",
  "next_run_date",
  "end_time",
  "created_at",
  "updated_at",
]);

const filterFields = {
  assistant_id: optional(z.string().min(1)),
  thread_id: optional(z.uuid()),
  metadata: optional(MetadataSchema),
};

export const CronCountSchema = z.object(filterFields).register(apiSchemas, { id: "CronCountRequest" });
export type CronFilter = z.infer<typeof CronCountSchema> & { enabled?: boolean };

export const CronSearchSchema = z
  .object({
    ...filterFields,
    enabled: optional(z.boolean()),
    limit: optional(z.number().int().min(1).max(1000)).describe("default 10"),
    offset: optional(z.number().int().min(0)),
    sort_by: optional(CronSortBySchema).describe("default created_at"),
    sort_order: optional(z.enum(["asc", "desc"])).describe("default desc"),
    select: optional(z.array(z.enum(Object.keys(CronSchema.shape) as [keyof Cron, ...(keyof Cron)[]])).min(1)),
  })
  .register(apiSchemas, { id: "CronSearch" });
export type CronSearch = z.infer<typeof CronSearchSchema>;

export const CronParamsSchema = z.object({ cron_id: z.uuid() });
export const ThreadParamsSchema = z.object({ thread_id: z.uuid() });
