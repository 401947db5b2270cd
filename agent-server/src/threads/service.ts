import { badRequest, conflict, forbidden, notFound } from "@agentplane/common";
import type { RunnableConfig } from "@langchain/core/runnables";
import { v7 as uuidv7 } from "uuid";
import type { ServerContext } from "../context.ts";
import {
  type AuthEvent,
  authorize,
  matchesAuthFilter,
  mergeAuthFilter,
  type RequestAuth,
} from "../custom-auth/authorize.ts";
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
  checkpoint_id?: string | null;
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

  /** The thread, or undefined when unknown (or, with `auth`, not the user's to read). */
  async find(threadId: string, auth?: RequestAuth): Promise<Thread | undefined> {
    const filter = await authorize(auth, "threads:read", { thread_id: threadId });
    const thread = await this.#ctx.storage.threads.get(threadId);
    return thread && matchesAuthFilter(thread.metadata, filter) ? thread : undefined;
  }

  /** The thread; 404 when unknown, or when `auth`'s handler for `event` filters it out. */
  async get(threadId: string, auth?: RequestAuth, event: AuthEvent = "threads:read", value?: object): Promise<Thread> {
    const filter = await authorize(auth, event, value ?? { thread_id: threadId });
    const thread = await this.#ctx.storage.threads.get(threadId);
    if (!thread || !matchesAuthFilter(thread.metadata, filter)) throw threadNotFound(threadId);
    return thread;
  }

  /**
   * Creates a thread (409 when the id exists, unless `if_exists: do_nothing` returns the existing
   * one) and replays `supersteps` into it; a thread they cannot be applied to is removed again.
   */
  async create(
    { supersteps, ...input }: ThreadCreate & { supersteps?: Superstep[] },
    auth?: RequestAuth,
  ): Promise<Thread> {
    const { threads } = this.#ctx.storage;
    // The handler may stamp the metadata (an owner): the thread is created with what it leaves.
    const value = { thread_id: input.thread_id, metadata: { ...input.metadata }, if_exists: input.if_exists };
    const filter = await authorize(auth, "threads:create", value);
    if (auth) input = { ...input, metadata: value.metadata };
    if (input.thread_id && (input.if_exists === "do_nothing" || filter)) {
      const existing = await threads.get(input.thread_id);
      // Someone else's thread of that id is a conflict, never returned.
      if (existing && (input.if_exists !== "do_nothing" || !matchesAuthFilter(existing.metadata, filter))) {
        throw conflict("Thread already exists");
      }
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

  /**
   * The filter `auth` puts on a search, merged into the query so that its equalities use the
   * metadata indexes; undefined when no thread can match both.
   */
  async #restrict<F extends ThreadFilter>(
    filter: F,
    auth: RequestAuth | undefined,
    value: object,
  ): Promise<F | undefined> {
    const restriction = await authorize(auth, "threads:search", value);
    if (!restriction) return filter;
    const merged = mergeAuthFilter(filter.metadata, restriction);
    return merged && { ...filter, metadata: merged.metadata, auth: merged.residual };
  }

  async search(query: ThreadSearch, auth?: RequestAuth): Promise<Page<Thread>> {
    const { metadata, ids, status, values, limit, offset } = query;
    const restricted = await this.#restrict(query, auth, { metadata, ids, status, values, limit, offset });
    return restricted ? this.#ctx.storage.threads.search(restricted) : { items: [], total: 0 };
  }

  async count(filter: ThreadFilter, auth?: RequestAuth): Promise<number> {
    const { metadata, values, status } = filter;
    const restricted = await this.#restrict(filter, auth, { metadata, values, status, limit: 0, offset: 0 });
    return restricted ? this.#ctx.storage.threads.count(restricted) : 0;
  }

  /** Merges metadata (as `auth`'s handler leaves it), sets (or with null removes) the TTL; 404 when unknown. */
  async patch(
    threadId: string,
    patch: { metadata?: JsonObject; ttl?: ThreadTtlPolicy | null },
    auth?: RequestAuth,
  ): Promise<Thread> {
    const value = { thread_id: threadId, metadata: patch.metadata };
    const current = auth ? await this.get(threadId, auth, "threads:update", value) : undefined;
    const updated = await this.#ctx.storage.threads.update(
      threadId,
      { metadata: value.metadata ?? {}, ttl: patch.ttl },
      current,
    );
    if (!updated) throw threadNotFound(threadId);
    return updated;
  }

  /** Deletes the thread, its checkpoints and its runs; 404 when unknown. */
  async delete(threadId: string, auth?: RequestAuth): Promise<void> {
    if (auth) await this.get(threadId, auth, "threads:delete");
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
  async deleteWhere(metadata: JsonObject, auth?: RequestAuth): Promise<void> {
    const { threads, checkpointer } = this.#ctx.storage;
    // With `auth`, only the threads its handler lets it delete.
    const merged = mergeAuthFilter(metadata, await authorize(auth, "threads:delete", { metadata }));
    if (!merged) return;
    const batch = 1000;
    for (;;) {
      const { items } = await threads.search({
        metadata: merged.metadata,
        auth: merged.residual,
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
  async prune(threadIds: string[], strategy: ThreadTtlStrategy, auth?: RequestAuth): Promise<number> {
    // With `auth`, threads its handler filters out are left alone, as if unknown.
    const filter = await authorize(auth, "threads:delete", { thread_ids: threadIds, strategy });
    const allowed = async (threadId: string) => {
      if (!auth) return true;
      const thread = await this.#ctx.storage.threads.get(threadId);
      return thread !== undefined && matchesAuthFilter(thread.metadata, filter);
    };
    let pruned = 0;
    for (const threadId of new Set(threadIds)) {
      if (!(await allowed(threadId))) continue;
      if (strategy === "delete") {
        if (await this.remove(threadId)) pruned++;
      } else if (await this.#ctx.storage.threads.get(threadId)) {
        await this.#ctx.storage.checkpointer.pruneThread(threadId);
        pruned++;
      }
    }
    return pruned;
  }

  /** A new thread with the source's metadata, TTL policy, checkpoints and state; 404 when unknown. */
  async copy(threadId: string, auth?: RequestAuth): Promise<Thread> {
    const { threads, checkpointer } = this.#ctx.storage;
    const source = await this.get(threadId, auth);
    const copyId = uuidv7();
    const ttl = source.ttl ? { strategy: source.ttl.strategy, ttl: source.ttl.ttl_minutes } : this.#defaultTtl;
    // Creating the copy is a create of its own: the handler may refuse it, or stamp its metadata.
    const value = { thread_id: copyId, metadata: { ...source.metadata, thread_id: copyId } };
    await authorize(auth, "threads:create", value);
    await threads.create({ thread_id: copyId, metadata: value.metadata, ttl });
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
  async state(
    threadId: string,
    checkpoint: CheckpointSelector,
    subgraphs: boolean,
    auth?: RequestAuth,
  ): Promise<ThreadState> {
    const thread = await this.get(threadId, auth);
    const graph = await threadGraph(this.#ctx, thread);
    if (!graph) return emptyThreadState();
    return toThreadState(await graph.getState(threadConfig(thread, checkpoint), { subgraphs }));
  }

  /**
   * Writes a checkpoint as if `as_node` had produced `values` (409 while a run is at work, 400
   * for a thread without a graph or an update the graph rejects); the new checkpoint.
   */
  async updateState(threadId: string, update: StateWrite, auth?: RequestAuth): Promise<ApiCheckpoint | null> {
    // As the reference: a thread the user cannot read is unknown, one it cannot update forbidden.
    const filter = await authorize(auth, "threads:update", { thread_id: threadId });
    const thread = await this.get(threadId, auth);
    if (!matchesAuthFilter(thread.metadata, filter)) throw forbidden("Forbidden");
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
  async history(threadId: string, query: HistoryQuery, auth?: RequestAuth): Promise<ThreadState[]> {
    const thread = await this.get(threadId, auth);
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
