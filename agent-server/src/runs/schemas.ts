import { z } from "zod";
import { MetadataSchema } from "../schemas/common.ts";
import { apiSchemas } from "../schemas/registry.ts";

/** Request and response shapes of the run endpoints: one zod schema per shape (validation, types, OpenAPI). */

export const RunStatusSchema = z.enum(["pending", "running", "error", "success", "timeout", "interrupted"]);
export type RunStatus = z.infer<typeof RunStatusSchema>;

export const MultitaskStrategySchema = z.enum(["reject", "rollback", "interrupt", "enqueue"]);
export type MultitaskStrategy = z.infer<typeof MultitaskStrategySchema>;

export const StreamModeSchema = z.enum([
  "values",
  "messages",
  "messages-tuple",
  "tasks",
  "checkpoints",
  "updates",
  "events",
  "debug",
  "custom",
]);
export type StreamMode = z.infer<typeof StreamModeSchema>;

export const CancelActionSchema = z.enum(["interrupt", "rollback"]);
export type CancelAction = z.infer<typeof CancelActionSchema>;

const JsonObjectSchema = z.record(z.string(), z.unknown());

// Nullable like the checkpoints the API returns (a subgraph task's has no checkpoint id yet), so they can be sent back as they are.
export const CheckpointConfigSchema = z
  .object({
    thread_id: z.string().nullish(),
    checkpoint_ns: z.string().nullish(),
    checkpoint_id: z.string().nullish(),
    checkpoint_map: JsonObjectSchema.nullish(),
  })
  .register(apiSchemas, { id: "CheckpointConfig" });

const SendSchema = z.object({ node: z.string(), input: z.unknown() });

export const CommandSchema = z
  .object({
    update: z.union([JsonObjectSchema, z.array(z.tuple([z.string(), z.unknown()]))]).nullish(),
    resume: z.unknown().optional(),
    goto: z.union([z.string(), SendSchema, z.array(z.union([z.string(), SendSchema]))]).nullish(),
  })
  .register(apiSchemas, { id: "Command", description: "Resumes, updates or redirects an interrupted graph." });
export type RunCommand = z.infer<typeof CommandSchema>;

const RunConfigSchema = z
  .object({
    tags: z.array(z.string()).optional(),
    recursion_limit: z.number().int().positive().optional(),
    configurable: JsonObjectSchema.optional(),
  })
  .catchall(z.unknown());

const InterruptNodesSchema = z.union([z.literal("*"), z.array(z.string())]);

// A path (`/hooks/done`) is a route of this server, the project's custom routes included.
const WebhookSchema = z
  .string()
  .max(65_536)
  .refine(
    (value) => /^(https?:\/\/|\/(?!\/))[^\s]+$/i.test(value),
    "Webhook must be an absolute http(s) URL or a path of this server",
  );

const StreamModesSchema = z
  .union([StreamModeSchema, z.array(StreamModeSchema)])
  .transform((mode) => (Array.isArray(mode) ? mode : [mode]));

/** Fields shared by stateful and stateless run creation. */
const runCreateFields = {
  assistant_id: z.string().min(1).describe("Assistant uuid or graph id"),
  input: z.unknown().optional(),
  command: CommandSchema.nullish(),
  metadata: MetadataSchema.nullish(),
  config: RunConfigSchema.nullish(),
  context: JsonObjectSchema.nullish(),
  webhook: WebhookSchema.nullish(),
  interrupt_before: InterruptNodesSchema.nullish(),
  interrupt_after: InterruptNodesSchema.nullish(),
  stream_mode: StreamModesSchema.optional(),
  stream_subgraphs: z.boolean().optional(),
  stream_resumable: z.boolean().optional(),
  feedback_keys: z.array(z.string()).nullish(),
  on_disconnect: z.enum(["cancel", "continue"]).optional(),
  after_seconds: z.number().min(0).max(31_536_000).optional(),
  multitask_strategy: MultitaskStrategySchema.optional(),
  durability: z.enum(["sync", "async", "exit"]).optional(),
  checkpoint_during: z.boolean().optional(),
  langsmith_tracer: JsonObjectSchema.nullish(),
};

export const RunCreateStatefulSchema = z
  .object({
    ...runCreateFields,
    checkpoint: CheckpointConfigSchema.nullish(),
    checkpoint_id: z.string().nullish(),
    if_not_exists: z.enum(["create", "reject"]).optional(),
  })
  .register(apiSchemas, { id: "RunCreateStateful" });
export type RunCreateStateful = z.infer<typeof RunCreateStatefulSchema>;

export const RunCreateStatelessSchema = z
  .object({ ...runCreateFields, on_completion: z.enum(["delete", "keep"]).optional() })
  .register(apiSchemas, { id: "RunCreateStateless" });
export type RunCreateStateless = z.infer<typeof RunCreateStatelessSchema>;

export const RunBatchCreateSchema = z
  .array(RunCreateStatelessSchema)
  .min(1)
  .register(apiSchemas, { id: "RunBatchCreate" });

/** What a worker needs to execute a run, kept on the run record (`kwargs`). */
export const RunKwargsSchema = z
  .object({
    input: z.unknown().optional(),
    command: CommandSchema.nullish(),
    config: JsonObjectSchema,
    context: JsonObjectSchema.nullish(),
    stream_mode: z.array(StreamModeSchema),
    subgraphs: z.boolean(),
    resumable: z.boolean(),
    interrupt_before: InterruptNodesSchema.nullish(),
    interrupt_after: InterruptNodesSchema.nullish(),
    webhook: z.string().nullish(),
    feedback_keys: z.array(z.string()).nullish(),
    temporary: z.boolean(),
    /** Started through the thread-centric protocol (`POST /threads/{id}/commands`): streams protocol events. */
    protocol: z.boolean().optional(),
  })
  .register(apiSchemas, { id: "RunKwargs" });
export type RunKwargs = z.infer<typeof RunKwargsSchema>;

export const RunSchema = z
  .object({
    run_id: z.string(),
    thread_id: z.string(),
    assistant_id: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    status: RunStatusSchema,
    metadata: JsonObjectSchema,
    kwargs: RunKwargsSchema,
    multitask_strategy: MultitaskStrategySchema,
  })
  .register(apiSchemas, { id: "Run" });
export type Run = z.infer<typeof RunSchema>;

export const ThreadIdParamsSchema = z.object({ thread_id: z.uuid() });
export const ThreadRunParamsSchema = z.object({ thread_id: z.uuid(), run_id: z.uuid() });
export const RunIdParamsSchema = z.object({ run_id: z.uuid() });

const booleanQuery = z
  .union([z.boolean(), z.enum(["true", "false", "1", "0", "True", "False"])])
  .transform((value) => value === true || value === "true" || value === "1" || value === "True");

export const RunListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(10),
  offset: z.coerce.number().int().min(0).default(0),
  status: RunStatusSchema.optional(),
});

export const CancelQuerySchema = z.object({
  wait: booleanQuery.default(false),
  action: CancelActionSchema.default("interrupt"),
});

export const BulkCancelQuerySchema = z.object({ action: CancelActionSchema.default("interrupt") });

export const BulkCancelBodySchema = z
  .union([
    z.object({ status: z.enum(["pending", "running", "all"]) }),
    z.object({ thread_id: z.uuid(), run_ids: z.array(z.uuid()).min(1) }),
  ])
  .register(apiSchemas, { id: "RunsCancel" });

export const JoinQuerySchema = z.object({ cancel_on_disconnect: booleanQuery.default(false) });

/** A query list: repeated parameters, comma-separated values, or (as the JS SDK sends arrays) a JSON array. */
const queryList = (value: unknown): unknown => {
  const items = Array.isArray(value) ? value : [value];
  return items.flatMap((item) => {
    if (typeof item !== "string") return [item];
    if (item.trimStart().startsWith("[")) {
      try {
        return JSON.parse(item) as unknown[];
      } catch {
        return [item];
      }
    }
    return item.split(",").map((part) => part.trim());
  });
};

export const JoinStreamQuerySchema = z.object({
  cancel_on_disconnect: booleanQuery.default(false),
  stream_mode: z.preprocess(queryList, z.array(StreamModeSchema)).optional(),
});

export const ThreadStreamModeSchema = z.enum(["run_modes", "lifecycle", "state_update"]);
export type ThreadStreamMode = z.infer<typeof ThreadStreamModeSchema>;

const ThreadStreamModesSchema = z.preprocess(queryList, z.array(ThreadStreamModeSchema).min(1));

/** `stream_modes` per the API spec; `stream_mode` is what the JS SDK's `threads.joinStream` sends. */
export const ThreadStreamQuerySchema = z.object({
  stream_modes: ThreadStreamModesSchema.optional(),
  stream_mode: ThreadStreamModesSchema.optional(),
});

/** The body `…/wait` and `…/join` answer with: final state values, or the error of a failed run. */
export const RunResultSchema = z
  .union([JsonObjectSchema, z.object({ __error__: z.object({ error: z.string(), message: z.string() }) }), z.null()])
  .register(apiSchemas, { id: "RunResult" });
