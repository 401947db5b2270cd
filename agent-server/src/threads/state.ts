import { badRequest, notFound } from "@agentplane/common";
import type { RunnableConfig } from "@langchain/core/runnables";
import { Command, type StateSnapshot } from "@langchain/langgraph";
import type { ServerContext } from "../context.ts";
import type { AnyCompiledGraph } from "../graphs/types.ts";
import type { JsonObject, Thread } from "../storage/types.ts";

/** `{thread_id, checkpoint_ns, checkpoint_id, checkpoint_map}` as the API exposes a checkpoint. */
export interface ApiCheckpoint {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string | null;
  checkpoint_map: JsonObject | null;
}

export interface ApiInterrupt {
  id?: string;
  value: unknown;
}

export interface ApiTask {
  id: string;
  name: string;
  path: unknown[] | null;
  error: string | null;
  interrupts: ApiInterrupt[];
  checkpoint: ApiCheckpoint | null;
  state: ThreadState | null;
  result: unknown;
}

export interface ThreadState {
  values: unknown;
  next: string[];
  tasks: ApiTask[];
  checkpoint: ApiCheckpoint | null;
  parent_checkpoint: ApiCheckpoint | null;
  checkpoint_id: string | null;
  parent_checkpoint_id: string | null;
  metadata: JsonObject;
  created_at: string | null;
  interrupts: ApiInterrupt[];
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;

const isMessage = (value: unknown): value is Record<string, unknown> & { getType(): string } =>
  isObject(value) && typeof value.getType === "function" && "content" in value && "additional_kwargs" in value;

const MESSAGE_FIELDS = ["content", "id", "name", "additional_kwargs", "response_metadata"] as const;
const TYPE_FIELDS: Record<string, readonly string[]> = {
  ai: ["tool_calls", "invalid_tool_calls", "usage_metadata"],
  tool: ["tool_call_id", "status", "artifact"],
};
/**
 * Sent only when the message has them, as the reference server sends them: a streamed AI
 * message's `tool_call_chunks` (clients merge a tool call's streamed arguments with them) and
 * the `metadata` LangChain puts on tool results.
 */
const PRESENT_FIELDS = ["tool_call_chunks", "metadata"] as const;
/**
 * A message made with LangChain's v1 content blocks (a model run with `output_version: "v1"`, as
 * thread-stream runs are) keeps them among its constructor's fields, which the reference sends
 * (`toDict()`: the serialised fields) as `content_blocks`; a loaded one has them snake-cased.
 */
const contentBlocksOf = (message: Record<string, unknown>) => {
  const kwargs = message.lc_kwargs as Record<string, unknown> | undefined;
  return kwargs?.contentBlocks ?? kwargs?.content_blocks;
};
/** A message type's fields, built once per type (a state may hold thousands of messages). */
const fieldsByType = new Map<string, readonly string[]>();
const fieldsOf = (type: string) => {
  let fields = fieldsByType.get(type);
  if (!fields) fieldsByType.set(type, (fields = [...MESSAGE_FIELDS, ...(TYPE_FIELDS[type] ?? [])]));
  return fields;
};

/** LangChain messages become plain `{type, content, …}` objects; everything else plain JSON. */
export function toJsonValue(value: unknown): unknown {
  if (value === undefined || value === null || typeof value !== "object") return value ?? null;
  if (isMessage(value)) {
    const type = value.getType();
    const result: JsonObject = { type };
    for (const field of fieldsOf(type)) result[field] = toJsonValue(value[field]);
    for (const field of PRESENT_FIELDS) {
      if (value[field] !== undefined) result[field] = toJsonValue(value[field]);
    }
    const blocks = contentBlocksOf(value);
    if (blocks !== undefined) result.content_blocks = toJsonValue(blocks);
    return result;
  }
  if (Array.isArray(value)) return value.map(toJsonValue);
  if (value instanceof Date) return value.toISOString();
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
    return toJsonValue((value as { toJSON(): unknown }).toJSON());
  }
  const result: JsonObject = {};
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const item = (value as Record<string, unknown>)[key];
    if (item !== undefined) result[key] = toJsonValue(item);
  }
  return result;
}

export function toApiCheckpoint(config: RunnableConfig | undefined): ApiCheckpoint | null {
  const configurable = config?.configurable;
  if (!configurable?.thread_id) return null;
  return {
    thread_id: String(configurable.thread_id),
    checkpoint_ns: String(configurable.checkpoint_ns ?? ""),
    checkpoint_id: configurable.checkpoint_id ?? null,
    checkpoint_map: configurable.checkpoint_map ?? null,
  };
}

function errorText(error: unknown): string | null {
  if (error === undefined || error === null) return null;
  if (isObject(error) && typeof error.message === "string") return error.message;
  return String(error);
}

const toApiInterrupts = (interrupts: readonly { id?: string; value?: unknown }[]): ApiInterrupt[] =>
  interrupts.map((interrupt) => ({ id: interrupt.id, value: toJsonValue(interrupt.value) }));

const isSnapshot = (value: unknown): value is StateSnapshot => isObject(value) && "values" in value && "next" in value;

/** LangGraph `StateSnapshot` → API `ThreadState` (subgraph states nested under their tasks). */
export function toThreadState(snapshot: StateSnapshot): ThreadState {
  const tasks: ApiTask[] = snapshot.tasks.map((task) => ({
    id: task.id,
    name: task.name,
    path: task.path ? (toJsonValue(task.path) as unknown[]) : null,
    error: errorText(task.error),
    interrupts: toApiInterrupts(task.interrupts),
    checkpoint: isSnapshot(task.state) ? null : toApiCheckpoint(task.state),
    state: isSnapshot(task.state) ? toThreadState(task.state) : null,
    result: toJsonValue(task.result),
  }));
  const checkpoint = toApiCheckpoint(snapshot.config);
  const parent = toApiCheckpoint(snapshot.parentConfig);
  return {
    values: toJsonValue(snapshot.values),
    next: [...snapshot.next],
    tasks,
    checkpoint,
    parent_checkpoint: parent,
    checkpoint_id: checkpoint?.checkpoint_id ?? null,
    parent_checkpoint_id: parent?.checkpoint_id ?? null,
    metadata: (toJsonValue(snapshot.metadata ?? {}) as JsonObject) ?? {},
    created_at: snapshot.createdAt ?? null,
    interrupts: tasks.flatMap((task) => task.interrupts),
  };
}

export type ThreadStateWithoutValues = Omit<ThreadState, "values">;

/** `toThreadState` but for the values: what readers of a state's checkpoint, tasks and metadata need. */
export function toThreadStateWithoutValues(snapshot: StateSnapshot): ThreadStateWithoutValues {
  const { values: _none, ...rest } = toThreadState({ ...snapshot, values: {} });
  return rest;
}

/** The state of a thread that never ran. */
export const emptyThreadState = (): ThreadState => ({
  values: {},
  next: [],
  tasks: [],
  checkpoint: null,
  parent_checkpoint: null,
  checkpoint_id: null,
  parent_checkpoint_id: null,
  metadata: {},
  created_at: null,
  interrupts: [],
});

/** Which checkpoint a request means; nulls (as the API returns them) count as absent. */
export interface CheckpointSelector {
  thread_id?: string | null;
  checkpoint_ns?: string | null;
  checkpoint_id?: string | null;
  checkpoint_map?: JsonObject | null;
}

/** The graph a thread runs, or undefined when it has none yet. */
export async function threadGraph(ctx: ServerContext, thread: Thread): Promise<AnyCompiledGraph | undefined> {
  const graphId = thread.metadata.graph_id;
  if (typeof graphId !== "string") return undefined;
  if (!ctx.graphs.has(graphId)) throw notFound(`Graph "${graphId}" not found`);
  return ctx.graphs.get(graphId, {
    configurable: { ...(thread.config.configurable as JsonObject), thread_id: thread.thread_id },
  });
}

/**
 * Graph-level config for `thread`, optionally pinned to a checkpoint. Checkpoints written with
 * it record the thread and graph ids in their metadata, plus the given `metadata` (e.g. the
 * `writes` of a state update).
 */
export function threadConfig(
  thread: Thread,
  checkpoint: CheckpointSelector = {},
  metadata: JsonObject = {},
): RunnableConfig {
  const configurable: JsonObject = { thread_id: thread.thread_id, checkpoint_ns: checkpoint.checkpoint_ns ?? "" };
  if (typeof thread.metadata.graph_id === "string") configurable.graph_id = thread.metadata.graph_id;
  if (checkpoint.checkpoint_id) configurable.checkpoint_id = checkpoint.checkpoint_id;
  if (checkpoint.checkpoint_map) configurable.checkpoint_map = checkpoint.checkpoint_map;
  return { configurable, metadata };
}

/** LangGraph rejects impossible updates (unknown node, ambiguous writer, …): the client's fault. */
export async function asClientError<T>(action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    const name = (error as Error)?.name;
    if (name === "InvalidUpdateError" || name === "GraphValueError" || name === "EmptyInputError") {
      throw badRequest((error as Error).message);
    }
    throw error;
  }
}

/** Keeps `thread.values` equal to the latest root checkpoint's values. */
export async function syncThreadValues(ctx: ServerContext, thread: Thread, graph: AnyCompiledGraph): Promise<Thread> {
  const snapshot = await graph.getState(threadConfig(thread));
  const updated = await ctx.storage.threads.update(thread.thread_id, {
    values: toJsonValue(snapshot.values) as JsonObject,
    state_updated: true,
  });
  return updated ?? thread;
}

export interface StateUpdate {
  values?: unknown;
  command?: { update?: unknown; resume?: unknown; goto?: unknown } | null;
  as_node?: string;
}

const toGraphUpdate = (update: StateUpdate): unknown =>
  update.command ? new Command(update.command as ConstructorParameters<typeof Command>[0]) : update.values;

/**
 * Replays `supersteps` into a new thread, one checkpoint per superstep (thread create with
 * `supersteps`), and returns the thread with its resulting values.
 */
export async function applySupersteps(
  ctx: ServerContext,
  thread: Thread,
  supersteps: { updates: StateUpdate[] }[],
): Promise<Thread> {
  const graph = await threadGraph(ctx, thread);
  if (!graph) throw badRequest(`Thread ${thread.thread_id} has no graph ID`);
  // One superstep per call, so each checkpoint's metadata records its own `writes`, as a state update's does.
  for (const step of supersteps) {
    const updates = step.updates.map((update) => ({ values: toGraphUpdate(update), asNode: update.as_node }));
    const writes = superstepWrites(step.updates);
    await asClientError(() => graph.bulkUpdateState(threadConfig(thread, {}, writes ? { writes } : {}), [{ updates }]));
  }
  return syncThreadValues(ctx, thread, graph);
}

/** `writes` of a superstep by node (a list when a node is named more than once); undefined when none names its node. */
function superstepWrites(updates: StateUpdate[]): JsonObject | undefined {
  const byNode = new Map<string, unknown[]>();
  for (const update of updates) {
    if (!update.as_node) continue;
    const value = toJsonValue(update.command ? (update.command.update ?? null) : (update.values ?? null));
    byNode.set(update.as_node, [...(byNode.get(update.as_node) ?? []), value]);
  }
  if (byNode.size === 0) return undefined;
  return Object.fromEntries([...byNode].map(([node, values]) => [node, values.length === 1 ? values[0] : values]));
}
