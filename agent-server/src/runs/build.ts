import type { IncomingHttpHeaders } from "node:http";
import type { Assistant, JsonObject, Thread } from "../storage/types.ts";
import type { Run, RunCreateStateful } from "./schemas.ts";

export type RunCreate = RunCreateStateful & { on_completion?: "delete" | "keep" };

/** The single-valued headers among those `http.configurable_headers` let through (`forwardedHeaders`). */
const headerValues = (headers: IncomingHttpHeaders): JsonObject => {
  const values: JsonObject = {};
  for (const [name, value] of Object.entries(headers)) if (typeof value === "string") values[name] = value;
  return values;
};

export const objectOr = (value: unknown): JsonObject =>
  value && typeof value === "object" ? (value as JsonObject) : {};

/** Run record of a new run: the assistant's, the thread's and the request's settings merged (pure). */
export function buildRun(
  payload: RunCreate,
  assistant: Assistant,
  thread: Thread,
  options: {
    runId: string;
    temporary: boolean;
    /** The request headers the run may see: already filtered by `http.configurable_headers`. */
    headers: IncomingHttpHeaders;
    now: string;
    protocol?: boolean;
  },
): Run {
  const checkpoint: JsonObject = {};
  if (payload.checkpoint) Object.assign(checkpoint, payload.checkpoint);
  if (payload.checkpoint_id) checkpoint.checkpoint_id = payload.checkpoint_id;
  delete checkpoint.thread_id;
  const configurable: JsonObject = {
    ...objectOr(assistant.config.configurable),
    ...objectOr(thread.config.configurable),
    ...objectOr(payload.config?.configurable),
    ...headerValues(options.headers),
    ...checkpoint,
    run_id: options.runId,
    thread_id: thread.thread_id,
    graph_id: assistant.graph_id,
    assistant_id: assistant.assistant_id,
  };
  return {
    run_id: options.runId,
    thread_id: thread.thread_id,
    assistant_id: assistant.assistant_id,
    created_at: options.now,
    updated_at: options.now,
    status: "pending",
    metadata: { ...assistant.metadata, ...thread.metadata, ...(payload.metadata ?? {}), thread_id: thread.thread_id },
    multitask_strategy: payload.multitask_strategy ?? "enqueue",
    kwargs: {
      input: payload.input,
      command: payload.command ?? null,
      config: { ...assistant.config, ...(payload.config ?? {}), configurable },
      context: { ...assistant.context, ...(payload.context ?? {}) },
      stream_mode: payload.stream_mode ?? ["values"],
      subgraphs: payload.stream_subgraphs ?? false,
      resumable: payload.stream_resumable ?? false,
      interrupt_before: payload.interrupt_before ?? null,
      interrupt_after: payload.interrupt_after ?? null,
      webhook: payload.webhook ?? null,
      feedback_keys: payload.feedback_keys ?? null,
      temporary: options.temporary,
      ...(options.protocol && { protocol: true }),
    },
  };
}
