import { conflict, forbidden, notFound } from "@agentplane/common";
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
  RunFence,
  Thread,
  ThreadCreate,
  ThreadFilter,
  ThreadSearch,
  ThreadTtlPolicy,
  ThreadTtlStrategy,
  ThreadUpdate,
} from "../storage/types.ts";
import type { JsonParts } from "../stream/references.ts";
import type { Superstep } from "./schemas.ts";
import {
  type ApiCheckpoint,
  applySupersteps,
  type CheckpointSelector,
  emptyThreadState,
  type ThreadState,
  type ThreadStateWithoutValues,
  toThreadState,
  toThreadStateWithoutValues,
} from "./state.ts";
import { threadStateJson, threadStatesJson } from "./state-json.ts";
import {
  type HistoryQuery,
  readThreadHistory,
  readThreadState,
  type StateWrite,
  writeThreadState,
} from "./state-ops.ts";
import { readThreadTtlSettings } from "./ttl.ts";

export type { HistoryQuery, StateWrite } from "./state-ops.ts";

/** The 404 of every thread lookup (threads, their state, their runs). */
export const threadNotFound = (threadId: string) => notFound(`Thread with ID ${threadId} not found`);

export interface ThreadServiceOptions {
  /** Called after a thread was deleted, to stop and delete its runs. */
  onDelete?: (threadId: string) => Promise<void>;
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
      { metadata: value.metadata ?? {}, metadata_bounded: true, ttl: patch.ttl },
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
   * checkpoints, and no run can be enqueued on it (the enqueue script checks the record) while
   * its runs are stopped and deleted. With `expected` (TTL sweeps) only while the stored record
   * is still that one and no run is in flight. False when nothing was deleted.
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
   * Deletes every thread whose metadata contains `metadata` as `DELETE /threads/{id}` does
   * (checkpoints and runs too), oldest first.
   */
  async deleteWhere(metadata: JsonObject, auth?: RequestAuth): Promise<void> {
    // With `auth`, only the threads its handler lets it delete.
    const merged = mergeAuthFilter(metadata, await authorize(auth, "threads:delete", { metadata }));
    if (!merged) return;
    const query = { metadata: merged.metadata, auth: merged.residual, limit: 1000, offset: 0 };
    for (;;) {
      const { items } = await this.#ctx.storage.threads.search({ ...query, sort_by: "created_at", sort_order: "asc" });
      if (items.length === 0) return;
      for (const thread of items) await this.remove(thread.thread_id);
    }
  }

  /**
   * Deletes the threads, or keeps only their latest checkpoint; how many existed. 409 (nothing
   * done) when one of them has a run in flight.
   */
  async prune(threadIds: string[], strategy: ThreadTtlStrategy, auth?: RequestAuth): Promise<number> {
    // With `auth`, threads its handler filters out are left alone, as if unknown.
    const filter = await authorize(auth, "threads:delete", { thread_ids: threadIds, strategy });
    const found = await Promise.all([...new Set(threadIds)].map((threadId) => this.#ctx.storage.threads.get(threadId)));
    const threads = found.filter((thread) => thread !== undefined && matchesAuthFilter(thread.metadata, filter));
    const busy = threads.find((thread) => thread?.status === "busy");
    if (busy) throw conflict(`Thread ${busy.thread_id} is busy: cancel its runs first`);
    let pruned = 0;
    for (const thread of threads as Thread[]) {
      if (strategy === "delete") {
        if (await this.remove(thread.thread_id)) pruned++;
      } else if (await this.#ctx.storage.threads.get(thread.thread_id)) {
        await this.#ctx.storage.checkpointer.pruneThread(thread.thread_id);
        pruned++;
      }
    }
    return pruned;
  }

  /**
   * A new thread with the source's metadata, TTL policy, checkpoints and state; 404 when unknown,
   * 409 while a run is in flight on it (its state is changing).
   */
  async copy(threadId: string, auth?: RequestAuth): Promise<Thread> {
    const { threads, checkpointer } = this.#ctx.storage;
    const source = await this.get(threadId, auth);
    if (source.status === "busy") throw conflict(`Thread ${threadId} is busy: wait for its runs to finish`);
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

  // ------------------------------------------------------------------ runs' side of a thread

  /**
   * The thread a run is created on: `existing`, a new one for `if_not_exists: create`, or a
   * temporary one (named `temporaryId` when given, so creating the same run again finds it).
   */
  async forRun(
    threadId: string | undefined,
    existing: Thread | undefined,
    { metadata, ifNotExists, temporaryId }: { metadata: JsonObject; ifNotExists?: string; temporaryId?: string },
  ): Promise<Thread> {
    const { threads } = this.#ctx.storage;
    if (threadId === undefined) {
      return temporaryId === undefined
        ? threads.create({ metadata, ttl: this.#defaultTtl })
        : threads.create({ thread_id: temporaryId, metadata, if_exists: "do_nothing", ttl: this.#defaultTtl });
    }
    if (existing) return existing;
    if (ifNotExists !== "create") throw threadNotFound(threadId);
    return threads.create({ thread_id: threadId, metadata, if_exists: "do_nothing", ttl: this.#defaultTtl });
  }

  /**
   * Records what a run just enqueued on the thread brings (graph ids, the config later state
   * reads rebuild the graph with); the write derives `busy` from the queue. Undefined when the
   * thread was deleted meanwhile (its runs go with it).
   */
  runQueued(thread: Thread, update: Pick<ThreadUpdate, "metadata" | "config">): Promise<Thread | undefined> {
    return this.#ctx.storage.threads.update(thread.thread_id, update, thread);
  }

  /**
   * A run's worker writes the thread as the run ends: only while it still holds the run's
   * lease. A thread deleted while the run executed loses the checkpoints the run wrote since.
   */
  async settleRun(threadId: string, update: ThreadUpdate, fence: RunFence, current?: Thread) {
    const written = await this.#ctx.storage.threads.updateByRun(threadId, update, fence, current);
    if (written === "missing") await this.#ctx.storage.checkpointer.deleteThread(threadId);
    return written;
  }

  /**
   * A run left the thread's queue without a worker settling it (cancelled while pending,
   * deleted, abandoned): the thread takes `status` unless other runs are still in flight.
   */
  async runsChanged(threadId: string, status: Exclude<Thread["status"], "busy"> = "idle"): Promise<void> {
    await this.#ctx.storage.threads.update(threadId, { status });
  }

  /** A temporary (stateless) thread after its run: the record and checkpoints; the run's record expires with its log. */
  async removeTemporary(threadId: string): Promise<void> {
    await this.#ctx.storage.threads.delete(threadId);
    await this.#ctx.storage.checkpointer.deleteThread(threadId);
  }

  // ------------------------------------------------------------------ state

  /** The thread's state at `checkpoint` (latest when empty); empty for a thread that never ran. */
  async state(
    threadId: string,
    checkpoint: CheckpointSelector,
    subgraphs: boolean,
    auth?: RequestAuth,
  ): Promise<ThreadState> {
    const snapshot = await readThreadState(this.#ctx, await this.get(threadId, auth), checkpoint, subgraphs);
    return snapshot ? toThreadState(snapshot) : emptyThreadState();
  }

  /** `state` as the API's JSON, in pieces (`state-json.ts`): what the state endpoints send. */
  async stateJson(
    threadId: string,
    checkpoint: CheckpointSelector,
    subgraphs: boolean,
    auth?: RequestAuth,
  ): Promise<JsonParts> {
    const snapshot = await readThreadState(this.#ctx, await this.get(threadId, auth), checkpoint, subgraphs);
    return threadStateJson(snapshot, this.#ctx.storage.checkpointValues);
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
    return writeThreadState(this.#ctx, thread, update);
  }

  /** The thread's past states, newest first, without their values (their checkpoints and metadata). */
  async checkpoints(threadId: string, query: HistoryQuery, auth?: RequestAuth): Promise<ThreadStateWithoutValues[]> {
    const snapshots = await readThreadHistory(this.#ctx, await this.get(threadId, auth), query);
    return snapshots.map((snapshot) => toThreadStateWithoutValues(snapshot));
  }

  /** The thread's past states, newest first, as the API's JSON in pieces (`state-json.ts`). */
  async historyJson(threadId: string, query: HistoryQuery, auth?: RequestAuth): Promise<JsonParts> {
    const snapshots = await readThreadHistory(this.#ctx, await this.get(threadId, auth), query);
    return threadStatesJson(snapshots, this.#ctx.storage.checkpointValues);
  }
}
