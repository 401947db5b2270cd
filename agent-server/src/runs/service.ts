import type { IncomingHttpHeaders } from "node:http";
import { conflict, notFound } from "@agentplane/common";
import { v7 as uuidv7 } from "uuid";
import { loadAssistant } from "../assistants/load.ts";
import { resolveAssistantId } from "../assistants/resolve.ts";
import type { ServerContext } from "../context.ts";
import { type AuthEvent, authorize, matchesAuthFilter, type RequestAuth } from "../custom-auth/authorize.ts";
import type { Assistant, Thread } from "../storage/types.ts";
import type { LoggedEvent } from "../stream/event-log.ts";
import { readRunEvents } from "../stream/reader.ts";
import { type ThreadService, threadNotFound } from "../threads/service.ts";
import { authorizeRunCreate, withAuthUser } from "./authorize.ts";
import { buildRun, objectOr, type RunCreate } from "./build.ts";
import { awaitOutcome, isFinished } from "./outcome.ts";
import type { RunBackend } from "./queue/backend.ts";
import type { RunListQuery } from "./queue/store.ts";
import type { CancelAction, Run } from "./schemas.ts";
import { type RunOutcome, settleCancelledPending } from "./worker/settle.ts";
import type { WorkerSlot } from "./worker/worker.ts";

const BUSY_MESSAGE =
  "Thread is already running a task. Wait for it to finish or choose a different multitask strategy.";

/** This process's workers as creating and awaiting runs see them (the worker pool). */
export interface LocalWorkers {
  /** A free worker for a run about to be created, or undefined when all are busy. */
  reserve(): WorkerSlot | undefined;
  /** The outcome of a run executing in this process, once it settles; undefined when it is not executing here. */
  outcome(runId: string): Promise<RunOutcome | undefined> | undefined;
}

/**
 * Creating, finding, cancelling and awaiting runs; the queue and workers do the executing. Every
 * thread read and write goes through the ThreadService, which owns the thread's life.
 */
export class RunService {
  readonly #ctx: ServerContext;
  readonly #backend: RunBackend;
  readonly #threads: ThreadService;
  readonly #workers: LocalWorkers | undefined;

  /** Without `workers` every run goes through the queue and is awaited through the event log. */
  constructor(ctx: ServerContext, backend: RunBackend, threads: ThreadService, workers?: LocalWorkers) {
    this.#ctx = ctx;
    this.#backend = backend;
    this.#threads = threads;
    this.#workers = workers;
  }

  async #assistant(idOrGraphId: string): Promise<Assistant> {
    const assistant = await loadAssistant(this.#ctx, resolveAssistantId(this.#ctx, idOrGraphId));
    if (!assistant) {
      throw notFound(
        `No assistant found for "${idOrGraphId}". Make sure the assistant ID is for a valid assistant or a valid graph ID.`,
      );
    }
    return assistant;
  }

  /**
   * Creates a run on `threadId` (or, without one, on a temporary thread) and queues it. With
   * `runId` creating is idempotent: when a run with that id exists it is returned and nothing
   * else happens (a temporary thread then has the run's id too). A `protocol` run streams the
   * events of the thread-centric protocol (thread-stream/). A thread deleted meanwhile is 404:
   * the enqueue checks it still exists in the same atomic step.
   */
  async create(
    threadId: string | undefined,
    payload: RunCreate,
    headers: IncomingHttpHeaders,
    { runId, protocol, auth }: { runId?: string; protocol?: boolean; auth?: RequestAuth } = {},
  ): Promise<Run> {
    const { store } = this.#backend;
    const created = runId === undefined ? undefined : await store.get(runId);
    if (created) return created;
    const strategy = payload.multitask_strategy ?? "enqueue";
    let filter: Record<string, unknown> | undefined;
    if (auth) {
      const authorized = await authorizeRunCreate(threadId, payload, runId, auth);
      filter = authorized.filter;
      payload = { ...withAuthUser(payload, auth), metadata: authorized.metadata };
    }
    const [assistant, existing, busy] = await Promise.all([
      this.#assistant(payload.assistant_id),
      threadId === undefined ? undefined : this.#threads.find(threadId),
      threadId !== undefined && strategy === "reject"
        ? store.inflight(threadId).then((runs) => runs.length > 0)
        : false,
    ]);
    // Someone else's thread is unknown: no run on it, and no new thread of its id either.
    if (threadId !== undefined && existing && !matchesAuthFilter(existing.metadata, filter)) {
      throw threadNotFound(threadId);
    }
    if (busy) throw conflict(BUSY_MESSAGE);
    const graphIds = { graph_id: assistant.graph_id, assistant_id: assistant.assistant_id };
    const thread = await this.#threads.forRun(threadId, existing, {
      metadata: { ...(payload.metadata ?? {}), ...graphIds },
      ifNotExists: payload.if_not_exists,
      temporaryId: runId,
    });
    const temporary = threadId === undefined && payload.on_completion !== "keep";
    const run = buildRun(payload, assistant, thread, {
      runId: runId ?? uuidv7(),
      temporary,
      headers,
      now: new Date().toISOString(),
      protocol,
    });
    const previous = strategy === "interrupt" || strategy === "rollback" ? await store.inflight(thread.thread_id) : [];
    const startAt = Date.now() + (payload.after_seconds ?? 0) * 1000;
    // A free worker here takes the run as it is stored when its thread has nothing else to do.
    const slot = payload.after_seconds ? undefined : this.#workers?.reserve();
    let queued: Awaited<ReturnType<typeof store.enqueue>>;
    try {
      queued = await store.enqueue(run, { startAt, rejectIfBusy: strategy === "reject", claimLeaseMs: slot?.leaseMs });
    } catch (error) {
      slot?.release();
      throw error;
    }
    if (queued.outcome !== "claimed") slot?.release();
    if (queued.outcome === "no-thread") throw threadNotFound(thread.thread_id);
    if (queued.outcome === "busy") throw conflict(BUSY_MESSAGE);
    if (queued.outcome === "exists") return (await store.get(run.run_id)) ?? run;
    let current: Thread | undefined;
    try {
      // After the enqueue, so the write sees the run in flight and the thread is `busy`.
      current = await this.#threads.runQueued(thread, {
        metadata: graphIds,
        // What graph factories are rebuilt with for this thread (state reads, later runs).
        config: {
          configurable: {
            ...objectOr(assistant.config.configurable),
            ...objectOr(thread.config.configurable),
            ...objectOr(payload.config?.configurable),
          },
        },
      });
    } finally {
      if (queued.outcome === "claimed") slot?.start(queued.claimed, current);
    }
    for (const earlier of previous) await this.cancel(earlier, strategy as CancelAction);
    return run;
  }

  /**
   * The run, 404 when unknown, (with `threadId`) on another thread, or on a thread `auth`'s
   * handler for `event` filters out (reading it, or `threads:update` to cancel, `threads:delete`
   * to delete).
   */
  async get(
    threadId: string | undefined,
    runId: string,
    auth?: RequestAuth,
    event: AuthEvent = "threads:read",
  ): Promise<Run> {
    const filter = await authorize(auth, event, { thread_id: threadId, run_id: runId });
    if (threadId !== undefined) await this.#requireThread(threadId, filter);
    const run = await this.#backend.store.get(runId);
    if (!run || (threadId !== undefined && run.thread_id !== threadId)) throw notFound("Run not found");
    if (filter && threadId === undefined) {
      const thread = await this.#threads.find(run.thread_id);
      if (!thread || !matchesAuthFilter(thread.metadata, filter)) throw notFound("Run not found");
    }
    return run;
  }

  /** The thread as stored, undefined when unknown (no authorization: for the server's own work). */
  findThread(threadId: string): Promise<Thread | undefined> {
    return this.#threads.find(threadId);
  }

  /** The thread, 404 when unknown or filtered out by `auth`'s handler for `event`. */
  async thread(threadId: string, auth?: RequestAuth, event: AuthEvent = "threads:read"): Promise<Thread> {
    return this.#threads.get(threadId, auth, event);
  }

  /**
   * Stops a pending run at once (a rollback also drops checkpoints an earlier attempt left, when
   * its worker died), or signals the worker executing it (in whatever process).
   */
  async cancel(run: Run, action: CancelAction): Promise<void> {
    const outcome = await this.#backend.store.cancel(run.run_id, action);
    if (outcome !== "cancelled") return;
    if (action === "rollback") await this.#ctx.storage.checkpointer.deleteRun(run.thread_id, run.run_id);
    await settleCancelledPending(this.#backend, run.run_id, action === "rollback");
    await this.#threads.runsChanged(run.thread_id);
  }

  /** Deletes a run that is not running (409 if it is), with its events; a thread left without work is idle. */
  async delete(run: Run): Promise<void> {
    const deleted = await this.#backend.store.delete(run.run_id);
    if (deleted === "running") throw conflict("Run is running: cancel it first");
    if (deleted === "missing") throw notFound("Run not found");
    await this.#backend.events.delete([run.run_id]);
    if (run.status === "pending") await this.#threads.runsChanged(run.thread_id);
  }

  /**
   * Removes every run of a deleted thread: pending ones at once, running ones are stopped and
   * rolled back (their worker deletes the record when it stops), finished ones with their events.
   */
  async deleteThreadRuns(threadId: string): Promise<void> {
    const { store, events } = this.#backend;
    const page = 100;
    for (;;) {
      const runs = await store.list(threadId, { limit: page, offset: 0 });
      const finished = runs.filter((run) => isFinished(run));
      for (const run of runs) {
        if (!finished.includes(run) && (await store.cancel(run.run_id, "rollback")) === "cancelled") {
          await settleCancelledPending(this.#backend, run.run_id, true);
        }
      }
      for (const run of finished) await store.delete(run.run_id);
      await events.delete(finished.map((run) => run.run_id));
      // Only a running run survives a pass (until its worker stops): stop once nothing else is left.
      if (runs.length < page || runs.every((run) => run.status === "running")) return;
    }
  }

  /**
   * Resolves with the run's outcome once it ends. Calls `onIdle` after each `idleMs` of silence
   * (for keep-alive bytes). Runs that ended without a log entry answer from their record.
   */
  outcome(run: Run, signal: AbortSignal, idleMs: number, onIdle?: () => void): Promise<RunOutcome | undefined> {
    const sources = {
      backend: this.#backend,
      local: this.#workers?.outcome(run.run_id),
      thread: () => this.#threads.find(run.thread_id),
    };
    return awaitOutcome(run, sources, { signal, idleMs, onIdle });
  }

  /** True when the run can produce no more events (gone, or finished without closing its log). */
  async isOver(runId: string): Promise<boolean> {
    return isFinished(await this.#backend.store.get(runId));
  }

  /** The run as stored now, on whatever thread; undefined when unknown. */
  find(runId: string): Promise<Run | undefined> {
    return this.#backend.store.get(runId);
  }

  /** The thread's runs, newest first; 404 when the thread does not exist (or `auth` may not read it). */
  async list(threadId: string, query: RunListQuery, auth?: RequestAuth): Promise<Run[]> {
    await this.thread(threadId, auth);
    return this.#backend.store.list(threadId, query);
  }

  /** The thread's latest `limit` runs, oldest first (a thread stream polls this: no thread check). */
  async recent(threadId: string, limit: number): Promise<Run[]> {
    return (await this.#backend.store.list(threadId, { limit, offset: 0 })).reverse();
  }

  /** How many runs of every thread are pending and running (cheap: counted, not read). */
  inflightCounts(): Promise<{ pending: number; running: number }> {
    return this.#backend.store.inflightCounts();
  }

  /** Pending and running runs of every thread (with `auth`, of the threads it may update). */
  async inflight(auth?: RequestAuth): Promise<Run[]> {
    const runs = await this.#backend.store.allInflight();
    const filter = await authorize(auth, "threads:update", {});
    if (!filter) return runs;
    const visible = await Promise.all(
      runs.map(async (run) => {
        const thread = await this.#threads.find(run.thread_id);
        return thread !== undefined && matchesAuthFilter(thread.metadata, filter);
      }),
    );
    return runs.filter((_, i) => visible[i]);
  }

  /** The run's events after `afterId` (`-1`: all), live until its `__end__` entry (yielded too). */
  readEvents(runId: string, options: { afterId: number; signal: AbortSignal; heartbeatMs: number }) {
    return readRunEvents(this.#backend.events, runId, { ...options, isOver: () => this.isOver(runId) });
  }

  /** The last event the run logged; undefined when it logged none or its log expired. */
  lastEvent(runId: string): Promise<LoggedEvent | undefined> {
    return this.#backend.events.last(runId);
  }

  /**
   * Calls `onActivity` whenever the queue signals that the thread's runs may have changed (in any
   * process), until the returned function is called; 404 when the thread does not exist.
   */
  async watchThread(threadId: string, onActivity: () => void): Promise<() => Promise<void>> {
    await this.#requireThread(threadId);
    return this.#backend.onWake((id) => {
      if (id === threadId) onActivity();
    });
  }

  async #requireThread(threadId: string, filter?: Record<string, unknown>): Promise<Thread> {
    const thread = await this.#threads.find(threadId);
    if (!thread || !matchesAuthFilter(thread.metadata, filter)) throw threadNotFound(threadId);
    return thread;
  }
}
