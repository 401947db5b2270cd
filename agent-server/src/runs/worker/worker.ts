import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { ServerContext } from "../../context.ts";
import type { Thread } from "../../storage/types.ts";
import type { CheckpointValues } from "../../stream/references.ts";
import { RunEventWriter } from "../../stream/writer.ts";
import type { ThreadService } from "../../threads/service.ts";
import type { RunBackend } from "../queue/backend.ts";
import type { ClaimedRun } from "../queue/store.ts";
import { executeRun } from "./execute.ts";
import { type RunEnd, type RunOutcome, settleAbandoned, settleRun } from "./settle.ts";

export interface WorkerPoolOptions {
  /** Every read and write of a run's thread goes through it (status, values, fencing). */
  threads: ThreadService;
  /** Runs this process executes at once. */
  concurrency: number;
  /** A run whose worker has not renewed its lease for this long is taken over by another worker. */
  leaseMs: number;
  /** Executions of one run (first try + takeovers) before it is failed. */
  maxAttempts: number;
  /** Longest sleep between queue checks when no wake-up signal arrives. */
  pollMs: number;
  callbacks?: BaseCallbackHandler[];
  /**
   * Told how each execution ended (metrics). A hook rather than a callback handler: a handler
   * makes LangChain report every node and channel write of the graph, a third of a small run's CPU.
   */
  onExecuted?: (status: "success" | "error" | "interrupted", seconds: number) => void;
  /**
   * With it, values events that are a checkpoint's state are logged as references to it (which
   * the log must read back: `MaterialisingRunEventLog`), and remembered for readers here.
   */
  checkpointValues?: CheckpointValues;
}

const executionStatus = { done: "success", failed: "error", cancelled: "interrupted" } as const;

/** Why an execution was stopped besides a client's cancel (`interrupt` / `rollback`). */
const SHUTDOWN = "shutdown";
const LEASE_LOST = "lease-lost";

interface ActiveRun {
  controller: AbortController;
  /** The outcome once settled; undefined when the execution ended without one (lease lost, shutdown). */
  done: Promise<RunOutcome | undefined>;
}

/** A free worker held for a run being created in this process (see `RunWorkerPool.reserve`). */
export interface WorkerSlot {
  /** Lease to claim the run under. */
  leaseMs: number;
  /** Executes the run claimed for this worker; `thread` is the thread's record as creating the run left it. */
  start(claimed: ClaimedRun, thread?: Thread): void;
  /** The run was queued instead (its thread had work): the worker is free again. */
  release(): void;
}

/**
 * The N workers of this process: takes due runs from the shared queue while it has free slots,
 * keeps their leases alive, stops them on cancel requests (from any process), and sweeps runs
 * whose worker died.
 */
export class RunWorkerPool {
  readonly #ctx: ServerContext;
  readonly #backend: RunBackend;
  readonly #options: WorkerPoolOptions;
  readonly #active = new Map<string, ActiveRun>();
  readonly #unsubscribe: (() => Promise<void>)[] = [];
  #stopping = false;
  #wake: (() => void) | undefined;
  #signalled = false;
  /** Workers held by `reserve` for runs being created. */
  #reserved = 0;
  /** Work may be queued that this process did not try to claim (it was at capacity). */
  #workWaiting = false;
  #loop: Promise<void> | undefined;
  #sweeper: NodeJS.Timeout | undefined;

  constructor(ctx: ServerContext, backend: RunBackend, options: WorkerPoolOptions) {
    this.#ctx = ctx;
    this.#backend = backend;
    this.#options = options;
  }

  async start(): Promise<void> {
    if (this.#options.concurrency <= 0) return;
    this.#unsubscribe.push(await this.#backend.onWake(() => this.#poke()));
    this.#unsubscribe.push(
      await this.#backend.onCancel((runId, action) => this.#active.get(runId)?.controller.abort(action)),
    );
    const sweepEvery = Math.max(50, Math.floor(this.#options.leaseMs / 2));
    this.#sweeper = setInterval(() => void this.#sweep(), sweepEvery);
    this.#loop = this.#dispatch();
  }

  #poke(): void {
    this.#signalled = true;
    this.#wake?.();
  }

  #hasFreeWorker(): boolean {
    return this.#active.size + this.#reserved < this.#options.concurrency;
  }

  /**
   * Holds a free worker for a run being created here, so that the run can be claimed as it is
   * stored and start without a trip through the queue; undefined when every worker is busy.
   */
  reserve(): WorkerSlot | undefined {
    if (this.#stopping || !this.#hasFreeWorker()) return undefined;
    this.#reserved++;
    let held = true;
    const free = () => {
      if (!held) return false;
      held = false;
      this.#reserved--;
      return true;
    };
    return {
      leaseMs: this.#options.leaseMs,
      start: (claimed, thread) => {
        if (!free()) return;
        if (this.#stopping) {
          void this.#backend.store.requeue(claimed.run.run_id, claimed.attempt);
          return;
        }
        this.#startRun(claimed, thread);
      },
      release: () => {
        if (free() && this.#workWaiting) this.#poke();
      },
    };
  }

  /** The outcome of a run executing in this process, once it settles; undefined when it is not executing here. */
  outcome(runId: string): Promise<RunOutcome | undefined> | undefined {
    return this.#active.get(runId)?.done;
  }

  async #dispatch(): Promise<void> {
    while (!this.#stopping) {
      this.#signalled = false;
      let claim: { claimed?: ClaimedRun; nextDueAt?: number } = {};
      if (!this.#hasFreeWorker()) {
        this.#workWaiting = true;
      } else {
        this.#workWaiting = false;
        try {
          claim = await this.#backend.store.claim(this.#options.leaseMs);
        } catch (error) {
          this.#ctx.logger.error({ err: error }, "claiming a run failed");
        }
      }
      if (claim.claimed) {
        this.#startRun(claim.claimed);
        // Claiming again right away is worth its round trip only when another run is already due.
        if (claim.nextDueAt !== undefined && claim.nextDueAt <= Date.now()) continue;
      }
      if (this.#signalled) continue;
      // At capacity only a finishing run frees a worker (it pokes); else sleep until the next delayed run is due.
      const { nextDueAt } = claim;
      const sleep = Math.min(
        this.#options.pollMs,
        nextDueAt === undefined ? Infinity : Math.max(5, nextDueAt - Date.now()),
      );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, sleep);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.#wake = done;
      });
      this.#wake = undefined;
    }
  }

  /** `thread`: the record as creating the run left it, when the run was claimed right then. */
  #startRun(claimed: ClaimedRun, thread?: Thread): void {
    const controller = new AbortController();
    const runId = claimed.run.run_id;
    const done = this.#execute(claimed, controller, thread)
      .catch((error) => {
        this.#ctx.logger.error({ err: error, run_id: runId }, "run execution failed");
        return undefined;
      })
      .finally(() => {
        this.#active.delete(runId);
        if (this.#workWaiting) this.#poke();
      });
    this.#active.set(runId, { controller, done });
  }

  async #execute(claimed: ClaimedRun, controller: AbortController, created?: Thread): Promise<RunOutcome | undefined> {
    const { run, attempt } = claimed;
    const { store, events } = this.#backend;
    const startedAt = new Date().toISOString();
    // Fenced: once another worker took the run over, this one appends nothing more and stops.
    const writer = new RunEventWriter(events, run.run_id, { attempt, onLost: () => controller.abort(LEASE_LOST) });
    const metadata = { run_id: run.run_id, attempt };
    // A retry replaces the failed attempt's events: joiners never take them for the run's.
    if (attempt === 1) writer.push("metadata", metadata);
    else if (!(await events.startAttempt(run.run_id, { event: "metadata", data: JSON.stringify(metadata) }, attempt)))
      return undefined;
    // The thread's status is `busy` from the write that followed the enqueue (the store derives it).
    const thread = created ?? (await this.#options.threads.find(run.thread_id));
    if (!thread) {
      const error = { error: "ThreadNotFound", message: `Thread ${run.thread_id} was deleted before the run started` };
      const end: RunEnd = { result: { kind: "failed", error, values: null }, attempt, startedAt };
      return settleRun(this.#ctx, this.#backend, this.#options.threads, run, end, writer);
    }
    // Renewals also pick up cancel requests whose pub/sub message was missed, so at least every second.
    const heartbeat = setInterval(
      async () => {
        try {
          const lease = await store.renew(run.run_id, attempt, this.#options.leaseMs);
          if (lease.lost) controller.abort(LEASE_LOST);
          else if (lease.cancel) controller.abort(lease.cancel);
        } catch (error) {
          this.#ctx.logger.warn({ err: error, run_id: run.run_id }, "lease renewal failed");
        }
      },
      Math.max(20, Math.min(1000, Math.floor(this.#options.leaseMs / 3))),
    );
    const { checkpointValues } = this.#options;
    let result: Awaited<ReturnType<typeof executeRun>>;
    const began = performance.now();
    try {
      result = await executeRun(this.#ctx, claimed, {
        signal: controller.signal,
        emit: ({ event, data }) => writer.push(event, data),
        reference:
          checkpointValues &&
          ((ref, values) => {
            checkpointValues.remember(ref, values);
            writer.pushReference("values", ref);
          }),
        callbacks: this.#options.callbacks,
      });
    } finally {
      clearInterval(heartbeat);
    }
    this.#options.onExecuted?.(executionStatus[result.kind], (performance.now() - began) / 1000);
    const reason = result.kind === "cancelled" ? result.reason : undefined;
    if (reason === LEASE_LOST) {
      await writer.flush().catch(() => {});
      return undefined;
    }
    if (reason === SHUTDOWN) {
      await writer.flush().catch(() => {});
      await store.requeue(run.run_id, attempt);
      return undefined;
    }
    const end: RunEnd = { result, attempt, startedAt, thread, checkpointValues };
    return settleRun(this.#ctx, this.#backend, this.#options.threads, run, end, writer);
  }

  async #sweep(): Promise<void> {
    try {
      const expired = await this.#backend.store.sweepExpired(this.#options.maxAttempts);
      for (const run of expired) {
        this.#ctx.logger.warn({ run_id: run.runId, attempt: run.attempt, outcome: run.outcome }, "run lease expired");
        if (run.outcome !== "pending")
          await settleAbandoned(this.#ctx, this.#backend, this.#options.threads, run, this.#options.maxAttempts);
      }
    } catch (error) {
      this.#ctx.logger.error({ err: error }, "sweeping expired runs failed");
    }
  }

  /**
   * Stops taking runs, lets running ones finish for up to `graceMs`, then stops the rest and
   * hands them back to the queue for another process.
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.#stopping = true;
    this.#wake?.();
    clearInterval(this.#sweeper);
    await this.#loop;
    const all = () => Promise.allSettled([...this.#active.values()].map((run) => run.done));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      all().then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), graceMs);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      for (const run of this.#active.values()) run.controller.abort(SHUTDOWN);
      await all();
    }
    await Promise.allSettled(this.#unsubscribe.map((unsubscribe) => unsubscribe()));
  }
}
