import type { CancelAction, Run, RunStatus } from "../schemas.ts";

/** A run a worker took from the queue, with the attempt number that identifies its lease. */
export interface ClaimedRun {
  run: Run;
  attempt: number;
  /** Epoch ms of the run's first claim: checkpoints from then on are the run's own. */
  firstStartedAt: number;
  /** Executed before (crashed worker, or handed back at shutdown): continue from its checkpoints. */
  resumed: boolean;
}

/** What `cancel` found: a pending run is cancelled at once, a running one is signalled. */
export type CancelOutcome = "cancelled" | "signalled" | "finished" | "missing";

/**
 * `claimed`: the run was due and its thread free, so it was taken for this process's worker at
 * once; `no-thread`: its thread was deleted since (nothing stored).
 */
export type EnqueueOutcome =
  | { outcome: "queued" | "busy" | "exists" | "no-thread" }
  | { outcome: "claimed"; claimed: ClaimedRun };

export interface EnqueueOptions {
  /** Epoch ms the run is due. */
  startAt: number;
  rejectIfBusy: boolean;
  /**
   * A worker of this process is free: when the run is due now and its thread has no other run,
   * claim it for that worker under a lease of this length instead of queueing it (no queue
   * round trip, no wake-up of other processes).
   */
  claimLeaseMs?: number;
}

/** A run whose worker stopped renewing its lease, and what the sweep did with it. */
export interface ExpiredRun {
  runId: string;
  threadId: string;
  /**
   * `pending`: handed back to the queue; `error`: out of attempts; `interrupted`: was being
   * cancelled; `deleted`: was being rolled back (its checkpoints and record are still to remove).
   */
  outcome: "pending" | "error" | "interrupted" | "deleted";
  attempt: number;
}

/** The `__end__` entry that closes a run's event log, and how long the log stays readable after. */
export interface ClosingEvent {
  data: string;
  keepSeconds: number;
  /** The run's thread is gone: its record expires with the log. */
  temporary?: boolean;
}

export interface RunListQuery {
  limit: number;
  offset: number;
  status?: RunStatus;
}

/**
 * Durable run records plus the queue: a FIFO per thread, a shared ready set of threads, one
 * lock per thread (one run at a time) and worker leases. Every state change that several
 * processes race on is a single atomic operation.
 */
export interface RunStore {
  /**
   * Stores the run `pending` and queues it (or claims it, see `claimLeaseMs`). Nothing is stored when
   * `rejectIfBusy` and the thread has work (`busy`), or when a run with that id already exists
   * (`exists`: a given id is created once).
   */
  enqueue(run: Run, options: EnqueueOptions): Promise<EnqueueOutcome>;
  get(runId: string): Promise<Run | undefined>;
  /** Runs of a thread, newest first. */
  list(threadId: string, query: RunListQuery): Promise<Run[]>;
  /** Pending and running runs of a thread, oldest first. */
  inflight(threadId: string): Promise<Run[]>;
  /** Pending and running runs of every thread. */
  allInflight(): Promise<Run[]>;
  /** How many runs of every thread are pending and running, without reading them (metrics scrapes). */
  inflightCounts(): Promise<{ pending: number; running: number }>;
  /** Number of runs waiting in the thread's queue. */
  queued(threadId: string): Promise<number>;
  /** Removes a run that is not running; `running` when it is (nothing removed). */
  delete(runId: string): Promise<"deleted" | "running" | "missing">;
  /**
   * Takes the oldest due run of a thread that has no running run and marks it running under a
   * lease; also tells when the next run is due (epoch ms; undefined: none queued), so a worker
   * claims again at once only when there is more to take.
   */
  claim(leaseMs: number): Promise<{ claimed?: ClaimedRun; nextDueAt?: number }>;
  /** Extends the lease; `lost` when another worker took the run over, else the requested cancel action if any. */
  renew(runId: string, attempt: number, leaseMs: number): Promise<{ lost: boolean; cancel?: CancelAction }>;
  /**
   * Ends the run with `status` (or deletes it), frees its thread and closes its event log with
   * `closing`, all at once; false when the lease was lost.
   */
  finish(runId: string, attempt: number, status: RunStatus | "deleted", closing: ClosingEvent): Promise<boolean>;
  /** Hands a running run back to the queue (graceful shutdown) without counting the attempt. */
  requeue(runId: string, attempt: number): Promise<void>;
  cancel(runId: string, action: CancelAction): Promise<CancelOutcome>;
  /** Requeues (or fails, past `maxAttempts`) runs whose lease expired. */
  sweepExpired(maxAttempts: number): Promise<ExpiredRun[]>;
}
