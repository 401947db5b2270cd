import { conflict } from "@agentplane/common";
import type {
  Page,
  RunFence,
  Thread,
  ThreadCreate,
  ThreadFilter,
  ThreadSearch,
  ThreadStore,
  ThreadUpdate,
} from "../storage/types.ts";
import { applyThreadUpdate, compareThreads, matchesThread, newThread } from "./records.ts";

/** The in-memory run queue as the thread store reads it in the step of a write (memory-backend.ts). */
export interface ThreadRunsView {
  /** A run of the thread other than `exceptRunId` is pending or running. */
  busy(threadId: string, exceptRunId?: string): boolean;
  /** `fence`'s attempt still holds the thread's lock. */
  holds(threadId: string, fence: RunFence): boolean;
}

/** Threads in a Map, for `agent-server dev` and tests; records are copied in and out. */
export class MemoryThreadStore implements ThreadStore {
  private readonly threads = new Map<string, Thread>();
  private runs: ThreadRunsView | undefined;

  /** Lets writes see the run queue, as the Redis store's scripts see the Redis one. */
  bindRuns(runs: ThreadRunsView): void {
    this.runs = runs;
  }

  has(threadId: string): boolean {
    return this.threads.has(threadId);
  }

  async create(input: ThreadCreate): Promise<Thread> {
    const existing = input.thread_id ? this.threads.get(input.thread_id) : undefined;
    if (existing) {
      if (input.if_exists === "do_nothing") return structuredClone(existing);
      throw conflict("Thread already exists");
    }
    const thread = newThread(input, new Date().toISOString());
    this.threads.set(thread.thread_id, structuredClone(thread));
    return thread;
  }

  async get(threadId: string): Promise<Thread | undefined> {
    const thread = this.threads.get(threadId);
    return thread && structuredClone(thread);
  }

  async update(threadId: string, update: ThreadUpdate): Promise<Thread | undefined> {
    const written = this.apply(threadId, update);
    return typeof written === "string" ? undefined : written;
  }

  async updateByRun(threadId: string, update: ThreadUpdate, fence: RunFence) {
    return this.apply(threadId, update, fence);
  }

  private apply(threadId: string, update: ThreadUpdate, fence?: RunFence): Thread | "missing" | "lease-lost" {
    const thread = this.threads.get(threadId);
    if (!thread) return "missing";
    if (fence && this.runs && !this.runs.holds(threadId, fence)) return "lease-lost";
    const busy = this.runs?.busy(threadId, fence?.runId) ?? false;
    const next = applyThreadUpdate(thread, structuredClone(update), new Date().toISOString(), busy);
    this.threads.set(threadId, next);
    return structuredClone(next);
  }

  async delete(threadId: string): Promise<boolean> {
    return this.threads.delete(threadId);
  }

  /** Runs that started or ended since `expected` was read count as a change too. */
  async updateIfUnchanged(expected: Thread, update: ThreadUpdate): Promise<Thread | undefined> {
    const busy = this.runs?.busy(expected.thread_id) ?? false;
    if (!this.isStored(expected) || busy !== (expected.status === "busy")) return undefined;
    return this.update(expected.thread_id, update);
  }

  async deleteIfUnchanged(expected: Thread): Promise<boolean> {
    if (this.runs?.busy(expected.thread_id)) return false;
    return this.isStored(expected) && this.threads.delete(expected.thread_id);
  }

  /** Records are copied in and out, so an unchanged one serialises to the same text. */
  private isStored(expected: Thread): boolean {
    const stored = this.threads.get(expected.thread_id);
    return stored !== undefined && JSON.stringify(stored) === JSON.stringify(expected);
  }

  async search(query: ThreadSearch): Promise<Page<Thread>> {
    const matching = this.matching(query).sort(compareThreads(query.sort_by, query.sort_order));
    return {
      items: matching.slice(query.offset, query.offset + query.limit).map((t) => structuredClone(t)),
      total: matching.length,
    };
  }

  async count(filter: ThreadFilter): Promise<number> {
    return this.matching(filter).length;
  }

  async expired(now: Date, limit: number): Promise<string[]> {
    const expiry = (thread: Thread) => Date.parse(thread.ttl?.expires_at ?? "");
    return [...this.threads.values()]
      .filter((thread) => expiry(thread) <= now.getTime())
      .sort((a, b) => expiry(a) - expiry(b))
      .slice(0, limit)
      .map((thread) => thread.thread_id);
  }

  private matching(filter: ThreadFilter): Thread[] {
    return [...this.threads.values()].filter((thread) => matchesThread(thread, filter));
  }
}
