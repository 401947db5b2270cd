import type { RunnableConfig } from "@langchain/core/runnables";
import { type Checkpoint, type CheckpointMetadata, type PendingWrite, TASKS } from "@langchain/langgraph-checkpoint";

/** The writes one task handed to `putWrites`, with the task path LangGraph gave them. */
export interface TaskWrites {
  taskId: string;
  taskPath: string;
  writes: PendingWrite[];
}

/** Per-task keys LangGraph adds to a node's config metadata; they describe a task, not the checkpoint. */
const TASK_KEYS = new Set([
  "checkpoint_id",
  "checkpoint_ns",
  "checkpoint_map",
  "langgraph_step",
  "langgraph_node",
  "langgraph_triggers",
  "langgraph_path",
  "langgraph_checkpoint_ns",
  "callbacks",
]);

/** Credentials forwarded as headers or passed in `configurable` never reach stored metadata. */
const SECRET_KEY = /(^|[-_])(api[-_]?key|authorization|cookie|secret|password|service[-_]key)$/i;

const keepKey = (key: string) =>
  !key.startsWith("__") && !key.startsWith("ls_") && !TASK_KEYS.has(key) && !SECRET_KEY.test(key);

const isPrimitive = (value: unknown) => ["string", "number", "boolean"].includes(typeof value);

const isPlainJson = (value: unknown): boolean => {
  if (value === null || isPrimitive(value)) return true;
  if (Array.isArray(value)) return value.every(isPlainJson);
  if (typeof value !== "object" || Object.getPrototypeOf(value) !== Object.prototype) return false;
  return Object.values(value as object).every(isPlainJson);
};

/** Channels that carry LangGraph's bookkeeping rather than a node's state update. */
const isBookkeepingChannel = (channel: string) =>
  channel.startsWith("__") || channel.startsWith("branch:") || channel.startsWith("join:");

const RETURN = "__return__";
const PULL_PREFIX = "~__pregel_pull, ";
const PUSH_PREFIX = "~__pregel_push, ";

/** What produced a checkpoint: the writes of its parent's tasks and the nodes of the sends the parent scheduled. */
export interface ProducedBy {
  tasks: TaskWrites[];
  /** Node of each `Send` in the parent's task queue: push task `i` runs `sends[i]`. */
  sends: string[];
}

/** Pull tasks are named in their path; push task paths give the index of the `Send` they run. */
function nodeOf(taskPath: string, sends: readonly string[]): string | undefined {
  if (taskPath.startsWith(PULL_PREFIX)) return taskPath.slice(PULL_PREFIX.length);
  if (!taskPath.startsWith(PUSH_PREFIX)) return undefined;
  const index = Number(taskPath.slice(PUSH_PREFIX.length).split(",")[0]);
  return Number.isInteger(index) ? sends[index] : undefined;
}

/**
 * `writes` keyed by node, as LangGraph used to record them: each node's update to the state
 * channels (a list when one node ran several times), or null when no visible node ran. The
 * hidden `__start__` node and failed or interrupted tasks are left out, like LangGraph's own
 * update stream does.
 */
export function writesByNode({ tasks, sends }: ProducedBy): Record<string, unknown> | null {
  const grouped = new Map<string, unknown[]>();
  for (const { taskPath, writes } of tasks) {
    const node = nodeOf(taskPath, sends);
    if (node === undefined || node === "__start__") continue;
    if (writes.some(([channel]) => channel === "__error__" || channel === "__interrupt__")) continue;
    const returned = writes.find(([channel]) => channel === RETURN);
    const update = returned
      ? returned[1]
      : Object.fromEntries(writes.filter(([channel]) => !isBookkeepingChannel(channel)));
    grouped.set(node, [...(grouped.get(node) ?? []), update]);
  }
  if (grouped.size === 0) return null;
  return Object.fromEntries([...grouped].map(([node, updates]) => [node, updates.length === 1 ? updates[0] : updates]));
}

/**
 * The metadata a checkpoint is stored with. Checkpoints written by graph execution (LangGraph
 * always passes `config.metadata` then) also carry the run's context — the config metadata
 * (run metadata, thread_id, run_id, graph_id, assistant_id…) and the primitive `configurable`
 * values (user_id…), minus LangGraph internals and secrets — and `writes`: the input for an
 * `input` checkpoint, the updates of the tasks that produced a `loop` checkpoint. A bare
 * `put` without config metadata stores the metadata unaltered.
 */
export function checkpointMetadata(
  config: RunnableConfig,
  metadata: CheckpointMetadata,
  checkpoint: Checkpoint,
  producedBy: ProducedBy,
): CheckpointMetadata {
  if (!config.metadata) return metadata;
  const context: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config.configurable ?? {})) {
    if (keepKey(key) && isPrimitive(value)) context[key] = value;
  }
  for (const [key, value] of Object.entries(config.metadata)) {
    if (keepKey(key) && isPlainJson(value)) context[key] = value;
  }
  const merged: Record<string, unknown> = { ...context, ...metadata };
  if (metadata.source === "input") merged.writes = { __start__: checkpoint.channel_values.__start__ ?? null };
  else if (metadata.source === "loop") merged.writes = writesByNode(producedBy);
  else if (!("writes" in merged)) merged.writes = null;
  return merged as CheckpointMetadata;
}

/** Room for checkpoints whose next checkpoint never comes (interrupts, failures): oldest go first. */
const MAX_TRACKED_CHECKPOINTS = 1000;

/**
 * Remembers, per checkpoint, the sends it schedules and the writes its tasks hand to
 * `putWrites`, until the next `put` (whose parent that checkpoint is) takes them to record its
 * `writes` metadata. LangGraph calls `putWrites` for a step's tasks before it puts the step's
 * checkpoint, in the same process.
 */
export class TaskWritesTracker {
  readonly #byCheckpoint = new Map<string, ProducedBy>();

  #key(config: RunnableConfig, checkpointId = config.configurable?.checkpoint_id): string | undefined {
    const { thread_id, checkpoint_ns } = config.configurable ?? {};
    if (thread_id === undefined || checkpointId === undefined) return undefined;
    return JSON.stringify([thread_id, checkpoint_ns ?? "", checkpointId]);
  }

  #entry(key: string): ProducedBy {
    let entry = this.#byCheckpoint.get(key);
    if (!entry) {
      entry = { tasks: [], sends: [] };
      this.#byCheckpoint.set(key, entry);
      if (this.#byCheckpoint.size > MAX_TRACKED_CHECKPOINTS) {
        const oldest = this.#byCheckpoint.keys().next().value;
        if (oldest !== undefined) this.#byCheckpoint.delete(oldest);
      }
    }
    return entry;
  }

  record(config: RunnableConfig, taskId: string, taskPath: string | undefined, writes: PendingWrite[]): void {
    if (!config.metadata) return;
    const key = this.#key(config);
    if (key === undefined) return;
    const entry = this.#entry(key);
    entry.tasks = entry.tasks.filter((task) => task.taskId !== taskId);
    entry.tasks.push({ taskId, taskPath: taskPath ?? "", writes });
  }

  /**
   * Called by `put` (its `config` points at the parent): what produced the checkpoint being put,
   * and remembers the sends that checkpoint schedules for the step after it.
   */
  put(config: RunnableConfig, checkpoint: Checkpoint): ProducedBy {
    const parentKey = this.#key(config);
    const produced = (parentKey !== undefined && this.#byCheckpoint.get(parentKey)) || { tasks: [], sends: [] };
    if (parentKey !== undefined) this.#byCheckpoint.delete(parentKey);
    const scheduled = checkpoint.channel_values[TASKS];
    const key = this.#key(config, checkpoint.id);
    if (config.metadata && key !== undefined && Array.isArray(scheduled) && scheduled.length > 0) {
      this.#entry(key).sends = scheduled.map((send: { node?: unknown }) => String(send?.node));
    }
    return produced;
  }
}

/** The run a write or checkpoint belongs to, as the server's run config records it. */
export const runIdOf = (config: RunnableConfig): string | undefined => {
  const runId = config.metadata?.run_id;
  return typeof runId === "string" ? runId : undefined;
};

/** The run and attempt a write belongs to, as the server's run config records them: what fences it by the run's lease. */
export const leaseOf = (config: RunnableConfig): { runId: string; attempt: number } | undefined => {
  const runId = runIdOf(config);
  const attempt = config.metadata?.run_attempt;
  return runId !== undefined && typeof attempt === "number" ? { runId, attempt } : undefined;
};
