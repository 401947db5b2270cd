import type { IncomingHttpHeaders } from "node:http";
import { conflict, notFound } from "@agentplane/common";
import { v7 as uuidv7 } from "uuid";
import { loadAssistant } from "../assistants/load.ts";
import { resolveAssistantId } from "../assistants/resolve.ts";
import type { ServerContext } from "../context.ts";
import {
  type AuthEvent,
  authConfigurable,
  authorize,
  matchesAuthFilter,
  type RequestAuth,
} from "../custom-auth/authorize.ts";
import type { Assistant, Thread, ThreadTtlPolicy } from "../storage/types.ts";
import { END_EVENT, type LoggedEvent } from "../stream/event-log.ts";
import { readRunEvents } from "../stream/reader.ts";
import { threadNotFound } from "../threads/service.ts";
import { readThreadTtlSettings } from "../threads/ttl.ts";
import { buildRun, objectOr, type RunCreate } from "./build.ts";
import type { RunBackend } from "./queue/backend.ts";
import type { RunListQuery } from "./queue/store.ts";
import type { CancelAction, Run } from "./schemas.ts";
import { type RunOutcome, settleCancelledPending } from "./worker/settle.ts";
import type { WorkerSlot } from "./worker/worker.ts";

const BUSY_MESSAGE =
  "Thread is already running a task. Wait for it to finish or choose a different multitask strategy.";

/**
 * The run's config with the authenticated user where graphs find it, as on the reference
 * (`langgraph_auth_user`, `_user_id`, `_permissions`), over anything the request put there. It
 * is stored with the run, so a worker in another process sees the same user; the credentials
 * the request carried are not (only the user `authenticate` returned).
 */
function withAuthUser(payload: RunCreate, auth: RequestAuth): RunCreate {
  const config = objectOr(payload.config);
  return {
    ...payload,
    config: { ...config, configurable: { ...objectOr(config.configurable), ...authConfigurable(auth) } },
  };
}

/** Gone, or in a final status. */
const isFinished = (run: Run | undefined) => !run || (run.status !== "pending" && run.status !== "running");

/** This process's workers as creating and awaiting runs see them (the worker pool). */
export interface LocalWorkers {
  /** A free worker for a run about to be created, or undefined when all are busy. */
  reserve(): WorkerSlot | undefined;
  /** The outcome of a run executing in this process, once it settles; undefined when it is not executing here. */
  outcome(runId: string): Promise<RunOutcome | undefined> | undefined;
}

/**
 * Waits at most `idleMs` for `settled`: its value, `idle` when the time ran out first, or
 * `aborted` when `signal` fired first.
 */
async function waitAtMost<T>(
  settled: Promise<T>,
  signal: AbortSignal,
  idleMs: number,
): Promise<{ value: T } | "idle" | "aborted"> {
  if (signal.aborted) return "aborted";
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    return await Promise.race([
      settled.then((value) => ({ value })),
      new Promise<"idle">((resolve) => {
        timer = setTimeout(() => resolve("idle"), idleMs);
      }),
      new Promise<"aborted">((resolve) => {
        onAbort = () => resolve("aborted");
        signal.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}

/** Creating, finding, cancelling and awaiting runs; the queue and workers do the executing. */
export class RunService {
  readonly #ctx: ServerContext;
  readonly #backend: RunBackend;
  readonly #workers: LocalWorkers | undefined;
  /** For every thread a run creates: `if_not_exists: create`, stateless runs (kept or not: a temporary thread a crash left behind expires too), A2A. */
  readonly #defaultTtl: ThreadTtlPolicy | undefined;

  /** Without `workers` every run goes through the queue and is awaited through the event log. */
  constructor(ctx: ServerContext, backend: RunBackend, workers?: LocalWorkers) {
    this.#ctx = ctx;
    this.#backend = backend;
    this.#workers = workers;
    this.#defaultTtl = readThreadTtlSettings(ctx.config.configPath).defaultTtl;
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
   * The run's thread: `existing`, a new one for `if_not_exists: create`, or a temporary one (named
   * `temporaryId` when given, so that creating the same run again finds the same thread).
   */
  async #thread(
    threadId: string | undefined,
    existing: Thread | undefined,
    payload: RunCreate,
    assistant: Assistant,
    temporaryId: string | undefined,
  ) {
    const { threads } = this.#ctx.storage;
    const metadata = {
      ...(payload.metadata ?? {}),
      graph_id: assistant.graph_id,
      assistant_id: assistant.assistant_id,
    };
    if (threadId === undefined) {
      return temporaryId === undefined
        ? threads.create({ metadata, ttl: this.#defaultTtl })
        : threads.create({ thread_id: temporaryId, metadata, if_exists: "do_nothing", ttl: this.#defaultTtl });
    }
    if (existing) return existing;
    if (payload.if_not_exists !== "create") throw threadNotFound(threadId);
    return threads.create({ thread_id: threadId, metadata, if_exists: "do_nothing", ttl: this.#defaultTtl });
  }

  /**
   * Creates a run on `threadId` (or, without one, on a temporary thread) and queues it. With
   * `runId` creating is idempotent: when a run with that id exists it is returned and nothing
   * else happens (a temporary thread then has the run's id too). A `protocol` run streams the
   * events of the thread-centric protocol (thread-stream/).
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
      const authorized = await this.#authorizeCreate(threadId, payload, runId, auth);
      filter = authorized.filter;
      payload = { ...withAuthUser(payload, auth), metadata: authorized.metadata };
    }
    const [assistant, existing, busy] = await Promise.all([
      this.#assistant(payload.assistant_id),
      threadId === undefined ? undefined : this.#ctx.storage.threads.get(threadId),
      threadId !== undefined && strategy === "reject"
        ? store.inflight(threadId).then((runs) => runs.length > 0)
        : false,
    ]);
    // Someone else's thread is unknown: no run on it, and no new thread of its id either.
    if (threadId !== undefined && existing && !matchesAuthFilter(existing.metadata, filter)) {
      throw threadNotFound(threadId);
    }
    if (busy) throw conflict(BUSY_MESSAGE);
    const thread = await this.#thread(threadId, existing, payload, assistant, runId);
    const temporary = threadId === undefined && payload.on_completion !== "keep";
    const run = buildRun(payload, assistant, thread, {
      runId: runId ?? uuidv7(),
      temporary,
      headers,
      now: new Date().toISOString(),
      protocol,
    });
    const busyThread = await this.#ctx.storage.threads.update(
      thread.thread_id,
      {
        status: "busy",
        metadata: { graph_id: assistant.graph_id, assistant_id: assistant.assistant_id },
        // What graph factories are rebuilt with for this thread (state reads, later runs).
        config: {
          configurable: {
            ...objectOr(assistant.config.configurable),
            ...objectOr(thread.config.configurable),
            ...objectOr(payload.config?.configurable),
          },
        },
      },
      thread,
    );
    const previous = strategy === "interrupt" || strategy === "rollback" ? await store.inflight(thread.thread_id) : [];
    const startAt = Date.now() + (payload.after_seconds ?? 0) * 1000;
    // A free worker here takes the run as it is stored when its thread has nothing else to do.
    const slot = payload.after_seconds ? undefined : this.#workers?.reserve();
    const queued = await store
      .enqueue(run, { startAt, rejectIfBusy: strategy === "reject", claimLeaseMs: slot?.leaseMs })
      .catch((error: unknown) => {
        slot?.release();
        throw error;
      });
    if (queued.outcome === "claimed") slot?.start(queued.claimed, busyThread);
    else slot?.release();
    if (queued.outcome === "busy") throw conflict(BUSY_MESSAGE);
    if (queued.outcome === "exists") return this.#createdMeanwhile(run);
    for (const earlier of previous) await this.cancel(earlier, strategy as CancelAction);
    return run;
  }

  /**
   * `threads:create_run` with what the reference passes; the handler may change the run's
   * metadata (which a new thread gets too). The filter the thread must match, and the metadata.
   */
  async #authorizeCreate(
    threadId: string | undefined,
    payload: RunCreate,
    runId: string | undefined,
    auth: RequestAuth,
  ) {
    const strategy = payload.multitask_strategy ?? "enqueue";
    const value = {
      thread_id: threadId,
      assistant_id: payload.assistant_id,
      run_id: runId,
      status: "pending",
      metadata: { ...payload.metadata },
      prevent_insert_if_inflight: strategy === "reject",
      multitask_strategy: strategy,
      if_not_exists: payload.if_not_exists,
      after_seconds: payload.after_seconds,
      kwargs: {
        input: payload.input,
        command: payload.command,
        config: payload.config,
        context: payload.context,
        stream_mode: payload.stream_mode,
      },
    };
    const filter = await authorize(auth, "threads:create_run", value);
    return { filter, metadata: value.metadata };
  }

  /**
   * Another process created the same run id between the first check and the enqueue: its run
   * stands, and the thread marked busy above is idle again unless that run is still at work.
   */
  async #createdMeanwhile(run: Run): Promise<Run> {
    const { store } = this.#backend;
    if ((await store.inflight(run.thread_id)).length === 0) {
      await this.#ctx.storage.threads.update(run.thread_id, { status: "idle" });
    }
    return (await store.get(run.run_id)) ?? run;
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
      const thread = await this.#ctx.storage.threads.get(run.thread_id);
      if (!thread || !matchesAuthFilter(thread.metadata, filter)) throw notFound("Run not found");
    }
    return run;
  }

  /** The thread, 404 when unknown or filtered out by `auth`'s handler for `event`. */
  async thread(threadId: string, auth?: RequestAuth, event: AuthEvent = "threads:read"): Promise<Thread> {
    return this.#requireThread(threadId, await authorize(auth, event, { thread_id: threadId }));
  }

  /** Stops a pending run at once, or signals the worker executing it (in whatever process). */
  async cancel(run: Run, action: CancelAction): Promise<void> {
    const outcome = await this.#backend.store.cancel(run.run_id, action);
    if (outcome !== "cancelled") return;
    await settleCancelledPending(this.#backend, run.run_id, action === "rollback");
    const inflight = await this.#backend.store.inflight(run.thread_id);
    if (inflight.length === 0) await this.#ctx.storage.threads.update(run.thread_id, { status: "idle" });
  }

  /** Deletes a run that is not running (409 if it is), with its events; a thread left without work is idle. */
  async delete(run: Run): Promise<void> {
    const deleted = await this.#backend.store.delete(run.run_id);
    if (deleted === "running") throw conflict("Run is running: cancel it first");
    if (deleted === "missing") throw notFound("Run not found");
    await this.#backend.events.delete([run.run_id]);
    if (run.status === "pending" && (await this.#backend.store.inflight(run.thread_id)).length === 0) {
      await this.#ctx.storage.threads.update(run.thread_id, { status: "idle" });
    }
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
      const finished = runs.filter((run) => run.status !== "pending" && run.status !== "running");
      for (const run of runs) if (!finished.includes(run)) await this.cancel(run, "rollback");
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
  async outcome(run: Run, signal: AbortSignal, idleMs: number, onIdle?: () => void): Promise<RunOutcome | undefined> {
    // A run executing in this process is awaited here: no subscription, no reading of its log.
    const local = this.#workers?.outcome(run.run_id);
    while (local) {
      const waited = await waitAtMost(local, signal, idleMs);
      if (waited === "aborted") return undefined;
      if (waited === "idle") {
        onIdle?.();
        continue;
      }
      if (waited.value) return waited.value;
      // The execution here ended without settling the run (lease lost, shutdown): its log tells the rest.
      break;
    }
    const { events, store } = this.#backend;
    // Answers from the record when the run ended without a readable log (expired, never executed).
    const fromRecord = async (current: Run | undefined): Promise<RunOutcome> => {
      if (!current) return { status: "deleted", values: null };
      const thread = await this.#ctx.storage.threads.get(run.thread_id);
      return { status: current.status, values: thread?.values ?? null };
    };
    let wake: (() => void) | undefined;
    let ended = false;
    const unwatch = await events.watch(run.run_id, (closing) => {
      if (!closing) return;
      ended = true;
      wake?.();
    });
    try {
      while (!signal.aborted) {
        ended = false;
        const last = await events.last(run.run_id);
        if (last?.event === END_EVENT) return JSON.parse(last.data) as RunOutcome;
        if (!last && isFinished(run)) return fromRecord(run);
        if (ended) continue;
        const woken = new Promise<void>((resolve) => {
          wake = resolve;
        });
        const waited = await waitAtMost(woken, signal, idleMs);
        wake = undefined;
        if (waited !== "idle") continue;
        const current = await store.get(run.run_id);
        if (isFinished(current)) return fromRecord(current);
        onIdle?.();
      }
      return undefined;
    } finally {
      await unwatch();
    }
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
        const thread = await this.#ctx.storage.threads.get(run.thread_id);
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
    const thread = await this.#ctx.storage.threads.get(threadId);
    if (!thread || !matchesAuthFilter(thread.metadata, filter)) throw threadNotFound(threadId);
    return thread;
  }
}
