import { badRequest, conflict, notFound } from "@agentplane/common";
import type { RunnableConfig } from "@langchain/core/runnables";
import { v7 as uuidv7 } from "uuid";
import type { ServerContext } from "../context.ts";
import type {
  JsonObject,
  Page,
  Thread,
  ThreadCreate,
  ThreadFilter,
  ThreadSearch,
  ThreadTtlPolicy,
  ThreadTtlStrategy,
} from "../storage/types.ts";
import type { Superstep } from "./schemas.ts";
import {
  type ApiCheckpoint,
  applySupersteps,
  asClientError,
  type CheckpointSelector,
  emptyThreadState,
  syncThreadValues,
  type ThreadState,
  threadConfig,
  threadGraph,
  toApiCheckpoint,
  toThreadState,
} from "./state.ts";
import { readThreadTtlSettings } from "./ttl.ts";

/** The 404 of every thread lookup (threads, their state, their runs). */
export const threadNotFound = (threadId: string) => notFound(`Thread with ID ${threadId} not found`);

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
  checkpoint_id?: string;
}

export interface ThreadServiceOptions {
  /** Called after a thread was deleted, to stop and delete its runs. */
  onDelete?: (threadId: string) => Promise<void>;
}

function checkpointIdOf(before: HistoryBefore | null | undefined): string | undefined {
  if (!before) return undefined;
  if (typeof before === "string") return before;
  return ("configurable" in before ? before.configurable.checkpoint_id : before.checkpoint_id) ?? undefined;
}

/** Threads, their checkpoints and their state; runs are told about deletions through `onDelete`. */
export class ThreadService {
  readonly #ctx: ServerContext;
  readonly #onDelete: ThreadServiceOptions["onDelete"];
  /** What threads created without a TTL of their own get (`checkpointer.ttl` in `langgraph.json`). */
  readonly #defaultTtl: ThreadTtlPolicy | undefined;

  constructor(ctx: ServerContext, options: ThreadServiceOptions = {}) {
    this.#ctx = ctx;
    this.#onDelete = options.onDelete;
    this.#defaultTtl = readThreadTtlSettings(ctx.config.configPath).defaultTtl;
  }

  /** The thread, or undefined when unknown. */
  find(threadId: string): Promise<Thread | undefined> {
    return this.#ctx.storage.threads.get(threadId);
  }

  /** The thread; 404 when unknown. */
  async get(threadId: string): Promise<Thread> {
    const thread = await this.find(threadId);
    if (!thread) throw threadNotFound(threadId);
    return thread;
  }

  /**
   * Creates a thread (409 when the id exists, unless `if_exists: do_nothing` returns the existing
   * one) and replays `supersteps` into it; a thread they cannot be applied to is removed again.
   */
  async create({ supersteps, ...input }: ThreadCreate & { supersteps?: Superstep[] }): Promise<Thread> {
    const { threads } = this.#ctx.storage;
    if (input.thread_id && input.if_exists === "do_nothing") {
      const existing = await threads.get(input.thread_id);
      if (existing) return existing;
    }
    const thread = await threads.create({ ...input, ttl: input.ttl ?? this.#defaultTtl });
    if (!supersteps?.length) return thread;
    try {
      return await applySupersteps(this.#ctx, thread, supersteps);
    } catch (error) {
      await this.remove(thread.thread_id);
      throw error;
    }
  }

  search(query: ThreadSearch): Promise<Page<Thread>> {
    return this.#ctx.storage.threads.search(query);
  }

  count(filter: ThreadFilter): Promise<number> {
    return this.#ctx.storage.threads.count(filter);
  }

  /** Merges metadata, sets (or with null removes) the TTL; 404 when unknown. */
  async patch(threadId: string, patch: { metadata?: JsonObject; ttl?: ThreadTtlPolicy | null }): Promise<Thread> {
    const updated = await this.#ctx.storage.threads.update(threadId, {
      metadata: patch.metadata ?? {},
      ttl: patch.ttl,
    });
    if (!updated) throw threadNotFound(threadId);
    return updated;
  }

  /** Deletes the thread, its checkpoints and its runs; 404 when unknown. */
  async delete(threadId: string): Promise<void> {
    if (!(await this.remove(threadId))) throw threadNotFound(threadId);
  }

  /**
   * Deletes a thread: the record first, so a failure part-way never leaves a thread without its
   * checkpoints, and no run can be created on it while its runs are stopped and deleted. With
   * `expected` (TTL sweeps) only while the stored record is still that one. False when nothing
   * was deleted.
   */
  async remove(threadId: string, expected?: Thread): Promise<boolean> {
    const { threads, checkpointer } = this.#ctx.storage;
    const deleted = expected ? await threads.deleteIfUnchanged(expected) : await threads.delete(threadId);
    // Unconditionally, checkpoints a thread left behind go too; conditionally, a thread that
    // changed meanwhile keeps everything.
    if (deleted || !expected) await checkpointer.deleteThread(threadId);
    if (deleted) await this.#onDelete?.(threadId);
    return deleted;
  }

  /**
   * Deletes every thread whose metadata contains `metadata`, with its checkpoints, oldest first.
   * Their runs are left alone (`onDelete` is not called), as assistant deletion always did.
   */
  async deleteWhere(metadata: JsonObject): Promise<void> {
    const { threads, checkpointer } = this.#ctx.storage;
    const batch = 1000;
    for (;;) {
      const { items } = await threads.search({
        metadata,
        limit: batch,
        offset: 0,
        sort_by: "created_at",
        sort_order: "asc",
      });
      if (items.length === 0) return;
      for (const thread of items) {
        await threads.delete(thread.thread_id);
        await checkpointer.deleteThread(thread.thread_id);
      }
    }
  }

  /** Deletes the threads, or keeps only their latest checkpoint; how many existed. */
  async prune(threadIds: string[], strategy: ThreadTtlStrategy): Promise<number> {
    let pruned = 0;
    for (const threadId of new Set(threadIds)) {
      if (strategy === "delete") {
        if (await this.remove(threadId)) pruned++;
      } else if (await this.find(threadId)) {
        await this.#ctx.storage.checkpointer.pruneThread(threadId);
        pruned++;
      }
    }
    return pruned;
  }

  /** A new thread with the source's metadata, TTL policy, checkpoints and state; 404 when unknown. */
  async copy(threadId: string): Promise<Thread> {
    const { threads, checkpointer } = this.#ctx.storage;
    const source = await this.get(threadId);
    const copyId = uuidv7();
    const ttl = source.ttl ? { strategy: source.ttl.strategy, ttl: source.ttl.ttl_minutes } : this.#defaultTtl;
    await threads.create({ thread_id: copyId, metadata: { ...source.metadata, thread_id: copyId }, ttl });
    await checkpointer.copyThread(source.thread_id, copyId);
    const copy = await threads.update(copyId, {
      values: source.values,
      interrupts: source.interrupts,
      config: source.config,
      state_updated: true,
    });
    return copy ?? (await this.get(copyId));
  }

  /** The thread's state at `checkpoint` (latest when empty); empty for a thread that never ran. */
  async state(threadId: string, checkpoint: CheckpointSelector, subgraphs: boolean): Promise<ThreadState> {
    const thread = await this.get(threadId);
    const graph = await threadGraph(this.#ctx, thread);
    if (!graph) return emptyThreadState();
    return toThreadState(await graph.getState(threadConfig(thread, checkpoint), { subgraphs }));
  }

  /**
   * Writes a checkpoint as if `as_node` had produced `values` (409 while a run is at work, 400
   * for a thread without a graph or an update the graph rejects); the new checkpoint.
   */
  async updateState(threadId: string, update: StateWrite): Promise<ApiCheckpoint | null> {
    const thread = await this.get(threadId);
    if (thread.status === "busy") throw conflict("Thread is busy");
    const graph = await threadGraph(this.#ctx, thread);
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
    await syncThreadValues(this.#ctx, thread, graph);
    return toApiCheckpoint(next);
  }

  /** The thread's past states, newest first. */
  async history(threadId: string, query: HistoryQuery): Promise<ThreadState[]> {
    const thread = await this.get(threadId);
    const graph = await threadGraph(this.#ctx, thread);
    if (!graph) return [];
    const beforeId = checkpointIdOf(query.before);
    const before: RunnableConfig | undefined = beforeId ? { configurable: { checkpoint_id: beforeId } } : undefined;
    const states: ThreadState[] = [];
    const history = graph.getStateHistory(threadConfig(thread, query.checkpoint ?? {}), {
      limit: query.limit,
      before,
      filter: query.metadata ?? undefined,
    });
    for await (const snapshot of history) states.push(toThreadState(snapshot));
    return states;
  }
}
