import { badRequest } from "@agentplane/common";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { StateSnapshot } from "@langchain/langgraph";
import type { ServerContext } from "../context.ts";
import type { JsonObject, Thread } from "../storage/types.ts";
import {
  type ApiCheckpoint,
  asClientError,
  type CheckpointSelector,
  syncThreadValues,
  threadConfig,
  threadGraph,
  toApiCheckpoint,
} from "./state.ts";

/** A page of history ends before this checkpoint: its id, the checkpoint, or a config wrapping one. */
export type HistoryBefore = string | CheckpointSelector | { configurable: CheckpointSelector };

export interface HistoryQuery {
  limit: number;
  before?: HistoryBefore | null;
  /** Only checkpoints whose metadata contains this. */
  metadata?: JsonObject | null;
  checkpoint?: CheckpointSelector | null;
}

/** What `POST /threads/{id}/state` writes: values as if `as_node` produced them, on top of `checkpoint`. */
export interface StateWrite {
  values?: JsonObject | unknown[] | null;
  as_node?: string;
  checkpoint?: CheckpointSelector;
  checkpoint_id?: string | null;
}

function checkpointIdOf(before: HistoryBefore | null | undefined): string | undefined {
  if (!before) return undefined;
  if (typeof before === "string") return before;
  return ("configurable" in before ? before.configurable.checkpoint_id : before.checkpoint_id) ?? undefined;
}

/** The thread's state at `checkpoint` (latest when empty); undefined for a thread with no graph yet. */
export async function readThreadState(
  ctx: ServerContext,
  thread: Thread,
  checkpoint: CheckpointSelector,
  subgraphs: boolean,
): Promise<StateSnapshot | undefined> {
  const graph = await threadGraph(ctx, thread);
  return graph && (await graph.getState(threadConfig(thread, checkpoint), { subgraphs }));
}

/** Writes a checkpoint as if `as_node` had produced the values (400 for a thread without a graph). */
export async function writeThreadState(
  ctx: ServerContext,
  thread: Thread,
  update: StateWrite,
): Promise<ApiCheckpoint | null> {
  const graph = await threadGraph(ctx, thread);
  if (!graph) throw badRequest(`Thread ${thread.thread_id} has no graph ID`);
  const target = { ...update.checkpoint, ...(update.checkpoint_id ? { checkpoint_id: update.checkpoint_id } : {}) };
  const values = update.values ?? null;
  const next = await asClientError(() =>
    graph.updateState(
      threadConfig(thread, target, update.as_node ? { writes: { [update.as_node]: values } } : {}),
      values,
      update.as_node,
    ),
  );
  await syncThreadValues(ctx, thread, graph);
  return toApiCheckpoint(next);
}

/** The thread's past states, newest first. */
export async function readThreadHistory(ctx: ServerContext, thread: Thread, query: HistoryQuery) {
  const graph = await threadGraph(ctx, thread);
  if (!graph) return [];
  const beforeId = checkpointIdOf(query.before);
  const before: RunnableConfig | undefined = beforeId ? { configurable: { checkpoint_id: beforeId } } : undefined;
  const states: StateSnapshot[] = [];
  const history = graph.getStateHistory(threadConfig(thread, query.checkpoint ?? {}), {
    limit: query.limit,
    before,
    filter: query.metadata ?? undefined,
  });
  for await (const snapshot of history) states.push(snapshot);
  return states;
}
