import { EventEmitter } from "node:events";
import type { RunFence } from "../../storage/types.ts";
import { DEFAULT_MAX_LOGGED_EVENTS, END_EVENT, type RunEventLog } from "../../stream/event-log.ts";
import type { MemoryThreadStore, ThreadRunsView } from "../../threads/memory-store.ts";
import type { CancelAction, Run, RunStatus } from "../schemas.ts";
import type { RunBackend } from "./backend.ts";
import { MemoryRunEventLog } from "./memory-event-log.ts";
import type {
  CancelOutcome,
  ClaimedRun,
  ClosingEvent,
  EnqueueOptions,
  EnqueueOutcome,
  ExpiredRun,
  RunListQuery,
  RunStore,
} from "./store.ts";

interface Entry {
  run: Run;
  attempt: number;
  startAt: number;
  seq: number;
  cancel?: CancelAction;
  leaseUntil?: number;
  firstStartedAt?: number;
}

const nowIso = () => new Date().toISOString();

/** The run queue in process memory (`agent-server dev`): same semantics as the Redis store, one process. */
class MemoryRunStore implements RunStore, ThreadRunsView {
  readonly #runs = new Map<string, Entry>();
  /** Run ids of each thread in arrival order, so a thread's runs are found without walking every run. */
  readonly #byThread = new Map<string, Set<string>>();
  readonly #queues = new Map<string, string[]>();
  readonly #active = new Map<string, string>();
  readonly #signals: EventEmitter;
  readonly #events: RunEventLog;
  readonly #threads: MemoryThreadStore | undefined;
  #seq = 0;

  constructor(signals: EventEmitter, events: RunEventLog, threads?: MemoryThreadStore) {
    this.#signals = signals;
    this.#events = events;
    this.#threads = threads;
  }

  busy(threadId: string, exceptRunId?: string): boolean {
    const active = this.#active.get(threadId);
    return (this.#queues.get(threadId)?.length ?? 0) > 0 || (active !== undefined && active !== exceptRunId);
  }

  holds(threadId: string, { runId, attempt }: RunFence): boolean {
    return this.#owned(runId, attempt)?.run.thread_id === threadId;
  }

  /** `attempt` holds the run's lease (what fenced event appends check). */
  owns(runId: string, attempt: number): boolean {
    return this.#owned(runId, attempt) !== undefined;
  }

  #queue(threadId: string): string[] {
    let queue = this.#queues.get(threadId);
    if (!queue) {
      queue = [];
      this.#queues.set(threadId, queue);
    }
    return queue;
  }

  #add(entry: Entry): void {
    this.#runs.set(entry.run.run_id, entry);
    const ids = this.#byThread.get(entry.run.thread_id) ?? new Set<string>();
    this.#byThread.set(entry.run.thread_id, ids.add(entry.run.run_id));
  }

  #remove(runId: string): void {
    const entry = this.#runs.get(runId);
    if (!entry) return;
    this.#runs.delete(runId);
    const ids = this.#byThread.get(entry.run.thread_id);
    ids?.delete(runId);
    if (ids?.size === 0) this.#byThread.delete(entry.run.thread_id);
  }

  #set(entry: Entry, status: RunStatus): void {
    entry.run = { ...entry.run, status, updated_at: nowIso() };
  }

  async enqueue(run: Run, { startAt, rejectIfBusy, claimLeaseMs }: EnqueueOptions): Promise<EnqueueOutcome> {
    if (this.#runs.has(run.run_id)) return { outcome: "exists" };
    if (this.#threads && !this.#threads.has(run.thread_id)) return { outcome: "no-thread" };
    const queue = this.#queue(run.thread_id);
    const idle = queue.length === 0 && !this.#active.has(run.thread_id);
    if (rejectIfBusy && !idle) return { outcome: "busy" };
    const now = Date.now();
    if (idle && claimLeaseMs !== undefined && startAt <= now) {
      const entry: Entry = { run: { ...run, status: "running" }, attempt: 1, startAt: now, seq: ++this.#seq };
      entry.leaseUntil = now + claimLeaseMs;
      entry.firstStartedAt = now;
      this.#add(entry);
      this.#active.set(run.thread_id, run.run_id);
      return { outcome: "claimed", claimed: { run: entry.run, attempt: 1, firstStartedAt: now, resumed: false } };
    }
    this.#add({ run: { ...run, status: "pending" }, attempt: 0, startAt, seq: ++this.#seq });
    queue.push(run.run_id);
    this.#signals.emit("wake", run.thread_id);
    return { outcome: "queued" };
  }

  async get(runId: string): Promise<Run | undefined> {
    return this.#runs.get(runId)?.run;
  }

  /** Newest first. */
  #threadRuns(threadId: string): Entry[] {
    return [...(this.#byThread.get(threadId) ?? [])].reverse().flatMap((runId) => this.#runs.get(runId) ?? []);
  }

  async list(threadId: string, { limit, offset, status }: RunListQuery): Promise<Run[]> {
    return this.#threadRuns(threadId)
      .map((entry) => entry.run)
      .filter((run) => !status || run.status === status)
      .slice(offset, offset + limit);
  }

  async inflightCounts(): Promise<{ pending: number; running: number }> {
    let pending = 0;
    let running = 0;
    for (const { run } of this.#runs.values()) {
      if (run.status === "pending") pending++;
      else if (run.status === "running") running++;
    }
    return { pending, running };
  }

  async inflight(threadId: string): Promise<Run[]> {
    const active = this.#active.get(threadId);
    const ids = active ? [active, ...this.#queue(threadId)] : this.#queue(threadId);
    return ids.flatMap((runId) => this.#runs.get(runId)?.run ?? []);
  }

  async allInflight(): Promise<Run[]> {
    return [...this.#runs.values()]
      .filter((entry) => entry.run.status === "pending" || entry.run.status === "running")
      .sort((a, b) => a.seq - b.seq)
      .map((entry) => entry.run);
  }

  async queued(threadId: string): Promise<number> {
    return this.#queue(threadId).length;
  }

  async delete(runId: string): Promise<"deleted" | "running" | "missing"> {
    const entry = this.#runs.get(runId);
    if (!entry) return "missing";
    if (entry.run.status === "running") return "running";
    const queue = this.#queue(entry.run.thread_id);
    if (queue.includes(runId)) queue.splice(queue.indexOf(runId), 1);
    this.#remove(runId);
    return "deleted";
  }

  async claim(leaseMs: number): Promise<{ claimed?: ClaimedRun; nextDueAt?: number }> {
    const now = Date.now();
    for (const [threadId, queue] of this.#queues) {
      // Emptied queues go, so a claim walks the threads with work, not every thread ever seen.
      if (queue.length === 0) this.#queues.delete(threadId);
      if (this.#active.has(threadId) || queue.length === 0) continue;
      const entry = this.#runs.get(queue[0] as string);
      if (!entry || entry.startAt > now) continue;
      queue.shift();
      this.#active.set(threadId, entry.run.run_id);
      entry.attempt += 1;
      entry.leaseUntil = now + leaseMs;
      const resumed = entry.firstStartedAt !== undefined;
      entry.firstStartedAt ??= now;
      this.#set(entry, "running");
      const claimed = { run: entry.run, attempt: entry.attempt, firstStartedAt: entry.firstStartedAt, resumed };
      return { claimed, nextDueAt: this.#nextDueAt() };
    }
    return { nextDueAt: this.#nextDueAt() };
  }

  #owned(runId: string, attempt: number): Entry | undefined {
    const entry = this.#runs.get(runId);
    return entry && entry.attempt === attempt && this.#active.get(entry.run.thread_id) === runId ? entry : undefined;
  }

  async renew(runId: string, attempt: number, leaseMs: number): Promise<{ lost: boolean; cancel?: CancelAction }> {
    const entry = this.#owned(runId, attempt);
    if (!entry) return { lost: true };
    entry.leaseUntil = Date.now() + leaseMs;
    return { lost: false, cancel: entry.cancel };
  }

  #release(entry: Entry): void {
    this.#active.delete(entry.run.thread_id);
    entry.leaseUntil = undefined;
    entry.cancel = undefined;
    this.#signals.emit("wake", entry.run.thread_id);
  }

  async finish(runId: string, attempt: number, status: RunStatus | "deleted", closing: ClosingEvent): Promise<boolean> {
    const entry = this.#owned(runId, attempt);
    if (!entry) return false;
    this.#release(entry);
    if (status === "deleted") this.#remove(runId);
    else this.#set(entry, status);
    await this.#events.append(runId, [{ event: END_EVENT, data: closing.data }], closing.keepSeconds);
    if (closing.temporary) setTimeout(() => this.#remove(runId), closing.keepSeconds * 1000).unref();
    return true;
  }

  async requeue(runId: string, attempt: number): Promise<void> {
    const entry = this.#owned(runId, attempt);
    if (!entry) return;
    this.#release(entry);
    entry.attempt -= 1;
    this.#set(entry, "pending");
    this.#queue(entry.run.thread_id).unshift(runId);
  }

  async cancel(runId: string, action: CancelAction): Promise<CancelOutcome> {
    const entry = this.#runs.get(runId);
    if (!entry) return "missing";
    if (entry.run.status === "pending") {
      const queue = this.#queue(entry.run.thread_id);
      if (queue.includes(runId)) queue.splice(queue.indexOf(runId), 1);
      if (action === "rollback") this.#remove(runId);
      else this.#set(entry, "interrupted");
      return "cancelled";
    }
    if (entry.run.status !== "running") return "finished";
    entry.cancel = action;
    this.#signals.emit("cancel", runId, action);
    return "signalled";
  }

  /** Workers of this single process never vanish without their runs settling; nothing expires. */
  async sweepExpired(): Promise<ExpiredRun[]> {
    return [];
  }

  #nextDueAt(): number | undefined {
    const due = [...this.#queues.entries()]
      .filter(([threadId, queue]) => queue.length > 0 && !this.#active.has(threadId))
      .map(([, queue]) => this.#runs.get(queue[0] as string)?.startAt ?? Infinity);
    return due.length > 0 ? Math.min(...due) : undefined;
  }
}

/**
 * Runs, queue, event logs and signals in this process only (`agent-server dev`). With `threads`,
 * runs are refused on unknown threads and thread writes derive `busy` from this queue.
 */
export function createMemoryRunBackend(
  threads?: MemoryThreadStore,
  maxLoggedEvents = DEFAULT_MAX_LOGGED_EVENTS,
): RunBackend {
  const signals = new EventEmitter();
  signals.setMaxListeners(0);
  const subscribe = (event: string, listener: (...args: any[]) => void) => {
    signals.on(event, listener);
    return async () => {
      signals.off(event, listener);
    };
  };
  const events = new MemoryRunEventLog(signals, maxLoggedEvents);
  const store = new MemoryRunStore(signals, events, threads);
  events.bindRuns(store);
  threads?.bindRuns(store);
  return {
    store,
    events,
    onWake: async (listener) => subscribe("wake", listener),
    onCancel: async (listener) => subscribe("cancel", listener),
    close: async () => {
      signals.removeAllListeners();
    },
  };
}
