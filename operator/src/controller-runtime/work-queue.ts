/**
 * A client-go style work queue: a key is queued at most once (dirty set), a key being processed is
 * never handed to a second worker (it is re-queued when the first finishes if it changed meanwhile),
 * failures back off exponentially per key, and every key is resynced periodically.
 */
export interface WorkQueueOptions {
  workers: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export type ReconcileResult = { requeueAfterMs?: number } | undefined;
export type Handler = (key: string) => Promise<ReconcileResult>;
export type ErrorReporter = (key: string, error: unknown, retryInMs: number) => void;

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly idleWaiters: (() => void)[] = [];
  private running = 0;
  private stopped = true;

  private readonly handler: Handler;
  private readonly options: WorkQueueOptions;
  private readonly onError: ErrorReporter;

  constructor(handler: Handler, options: WorkQueueOptions, onError: ErrorReporter = () => {}) {
    this.handler = handler;
    this.options = options;
    this.onError = onError;
  }

  get depth(): number {
    return this.queue.length;
  }

  start(): void {
    this.stopped = false;
    this.pump();
  }

  /** Stops handing out keys; resolves once in-flight handlers finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    if (this.running > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  add(key: string): void {
    if (this.dirty.has(key)) return;
    this.dirty.add(key);
    if (!this.processing.has(key)) this.queue.push(key);
    this.pump();
  }

  /** Adds `key` after `delayMs`; an earlier pending delay for the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.stopped) return;
    const at = Date.now() + delayMs;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.delayed.set(key, { at, timer });
  }

  backoffFor(key: string): number {
    const failures = this.failures.get(key) ?? 0;
    return Math.min(this.options.baseDelayMs * 2 ** failures, this.options.maxDelayMs);
  }

  /** Resolves when nothing is queued or running (used by tests and benchmarks). */
  async idle(): Promise<void> {
    if (this.queue.length === 0 && this.running === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (!this.stopped && this.running < this.options.workers && this.queue.length > 0) {
      const key = this.queue.shift() as string;
      this.dirty.delete(key);
      this.processing.add(key);
      this.running++;
      void this.process(key);
    }
  }

  private async process(key: string): Promise<void> {
    try {
      const result = await this.handler(key);
      this.failures.delete(key);
      if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
    } catch (error) {
      const delay = this.backoffFor(key);
      this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
      this.onError(key, error, delay);
      this.addAfter(key, delay);
    } finally {
      this.processing.delete(key);
      this.running--;
      if (this.dirty.has(key)) this.queue.push(key);
      this.pump();
      if (this.running === 0 && (this.queue.length === 0 || this.stopped)) {
        for (const resolve of this.idleWaiters.splice(0)) resolve();
      }
    }
  }
}
