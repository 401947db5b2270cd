import type { RunnableConfig } from "@langchain/core/runnables";
import type { StreamMode } from "../runs/schemas.ts";
import type { JsonObject } from "../storage/types.ts";
import { toApiCheckpoint, toJsonValue } from "../threads/state.ts";

/**
 * The LangGraph.js stream modes a run needs for the API modes a client asked for: `values`
 * always (the run's result), unless the run goes through `streamEvents`. There the set is the
 * reference server's (values only for values or legacy messages, debug always), because the
 * modes decide where LangGraph interleaves its chunks with the callback events (`events`,
 * message tokens): the same set gives the same order.
 */
export function graphStreamModes(requested: readonly StreamMode[], viaStreamEvents = false): string[] {
  const modes = new Set<string>(viaStreamEvents ? [] : ["values"]);
  for (const mode of requested) {
    if (mode === "messages-tuple") modes.add("messages");
    else if (mode === "messages") modes.add("values");
    else if (mode !== "events") modes.add(mode);
  }
  if (viaStreamEvents) modes.add("debug");
  return [...modes];
}

/** Whether a subgraph run streams checkpoint envelopes before its `values` events (see `mapGraphChunk`). */
const sendsEnvelopes = (requested: readonly StreamMode[], subgraphs: boolean): boolean =>
  subgraphs && !requested.includes("checkpoints") && (requested.includes("values") || requested.includes("messages"));

/**
 * Whether the run must go through `streamEvents`: raw events, legacy token messages, or the
 * checkpoint envelopes LangGraph.js only streams from `streamEvents`.
 */
export const needsStreamEvents = (requested: readonly StreamMode[], subgraphs = false): boolean =>
  requested.includes("events") || requested.includes("messages") || sendsEnvelopes(requested, subgraphs);

/**
 * LangGraph.js's lightweight `{id, parent_id, step, source}` checkpoint chunk (its own test,
 * `isCheckpointEnvelope`, is not exported by every version): a full checkpoint has `config` and `values`.
 */
const isCheckpointEnvelope = (chunk: unknown): boolean => {
  if (typeof chunk !== "object" || chunk === null) return false;
  const envelope = chunk as Record<string, unknown>;
  return (
    typeof envelope.id === "string" &&
    ("source" in envelope || typeof envelope.step === "number") &&
    !("values" in envelope) &&
    !("config" in envelope)
  );
};

/** API stream mode an SSE event name belongs to (for `stream_mode` filters on joins). */
export function eventStreamMode(event: string): string {
  const base = event.split("|")[0] ?? event;
  if (base.startsWith("messages/")) return "messages";
  if (base === "messages") return "messages-tuple";
  return base;
}

const withoutInternalKeys = (config: RunnableConfig | undefined): unknown => {
  if (!config?.configurable) return config ?? null;
  const { callbacks: _callbacks, ...rest } = config as RunnableConfig & { callbacks?: unknown };
  const configurable = Object.fromEntries(Object.entries(config.configurable).filter(([key]) => !key.startsWith("__")));
  return { ...rest, configurable };
};

interface GraphTask {
  state?: unknown;
  [key: string]: unknown;
}

const isRunnableConfig = (value: unknown): value is RunnableConfig =>
  typeof value === "object" && value !== null && "configurable" in value;

/** A task whose `state` is a config is exposed with a `checkpoint` instead. */
function apiTask(task: GraphTask): unknown {
  if (!isRunnableConfig(task.state)) return toJsonValue(task);
  const { state, ...rest } = task;
  return toJsonValue({ ...rest, checkpoint: toApiCheckpoint(state) });
}

interface GraphCheckpoint {
  config: RunnableConfig;
  parentConfig?: RunnableConfig;
  tasks?: GraphTask[];
  [key: string]: unknown;
}

/** LangGraph.js checkpoint payload → API shape (`parent_config`, `checkpoint`, `parent_checkpoint`). */
export function apiCheckpointPayload(payload: GraphCheckpoint): unknown {
  const { parentConfig, config, tasks, ...rest } = payload;
  return {
    ...(toJsonValue(rest) as JsonObject),
    config: toJsonValue(withoutInternalKeys(config)),
    parent_config: toJsonValue(withoutInternalKeys(parentConfig)),
    checkpoint: toApiCheckpoint(config),
    parent_checkpoint: toApiCheckpoint(parentConfig),
    tasks: (tasks ?? []).map(apiTask),
  };
}

function apiData(mode: string, chunk: unknown): unknown {
  switch (mode) {
    case "checkpoints":
      return apiCheckpointPayload(chunk as GraphCheckpoint);
    case "tasks":
      return apiTask(chunk as GraphTask);
    case "debug": {
      const debug = chunk as { type: string; payload: unknown };
      if (debug.type === "checkpoint")
        return { ...debug, payload: apiCheckpointPayload(debug.payload as GraphCheckpoint) };
      if (debug.type === "task_result" || debug.type === "task")
        return { ...debug, payload: apiTask(debug.payload as GraphTask) };
      return toJsonValue(chunk);
    }
    default:
      return toJsonValue(chunk);
  }
}

export interface ApiEvent {
  event: string;
  data: unknown;
}

/**
 * One LangGraph.js stream chunk → the SSE events the client asked for. Subgraph chunks are
 * named `mode|ns…` and only sent when `subgraphs` is set.
 */
export function mapGraphChunk(
  namespace: string[],
  mode: string,
  chunk: unknown,
  requested: ReadonlySet<StreamMode>,
  subgraphs: boolean,
): ApiEvent[] {
  if (namespace.length > 0 && !subgraphs) return [];
  const name = (base: string) => (namespace.length > 0 ? `${base}|${namespace.join("|")}` : base);
  // With subgraphs, `streamEvents` puts an envelope before each `values` chunk; the reference
  // server passes them on as `checkpoints` events when the client asked for values but not checkpoints.
  if (mode === "checkpoints" && isCheckpointEnvelope(chunk)) {
    const requestedModes = [...requested];
    return sendsEnvelopes(requestedModes, subgraphs) ? [{ event: name("checkpoints"), data: toJsonValue(chunk) }] : [];
  }
  if (mode === "messages") {
    if (!requested.has("messages-tuple")) return [];
    const [message, metadata] = chunk as [unknown, unknown];
    return [{ event: name("messages"), data: [toJsonValue(message), toJsonValue(metadata)] }];
  }
  if (!requested.has(mode as StreamMode)) return [];
  return [{ event: name(mode), data: apiData(mode, chunk) }];
}

interface MessageChunkLike {
  id?: string;
  concat(other: MessageChunkLike): MessageChunkLike;
}

/**
 * The legacy `messages` mode: `messages/metadata` on a message's first token, then
 * `messages/partial` with the text so far, and `messages/complete` once the message is in the state.
 */
export class LegacyMessages {
  readonly #partial = new Map<string, MessageChunkLike>();
  readonly #complete = new Set<string>();

  token(chunk: MessageChunkLike, metadata: unknown): ApiEvent[] {
    if (!chunk.id) return [];
    const events: ApiEvent[] = [];
    const previous = this.#partial.get(chunk.id);
    const merged = previous ? previous.concat(chunk) : chunk;
    if (!previous)
      events.push({ event: "messages/metadata", data: { [chunk.id]: { metadata: toJsonValue(metadata) } } });
    this.#partial.set(chunk.id, merged);
    events.push({ event: "messages/partial", data: [toJsonValue(merged)] });
    return events;
  }

  values(values: unknown): ApiEvent[] {
    const messages = (values as { messages?: unknown } | null)?.messages;
    const fresh = (Array.isArray(messages) ? messages : messages ? [messages] : []).filter(
      (message: { id?: string }) => typeof message?.id === "string" && !this.#complete.has(message.id),
    );
    for (const message of fresh) this.#complete.add(message.id);
    return fresh.length > 0 ? [{ event: "messages/complete", data: toJsonValue(fresh) }] : [];
  }
}
