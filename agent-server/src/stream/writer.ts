import type { NewEvent, RunEventLog } from "./event-log.ts";

/** The attempt a run's worker appends under, and what to do once its appends are refused. */
export interface WriterFence {
  attempt: number;
  /** Called once, when an append was refused: another worker took the run over. */
  onLost(): void;
}

/**
 * Appends a run's events to its log in production order without making the graph wait for
 * Redis: events pushed while one append is in flight go out together in the next one.
 * With a fence, every append is made only while the worker's attempt holds the run's lease;
 * after a refusal nothing more is sent (the run's log belongs to its new owner).
 */
export class RunEventWriter {
  readonly #log: RunEventLog;
  readonly #runId: string;
  readonly #fence: WriterFence | undefined;
  #buffer: NewEvent[] = [];
  #inflight: Promise<void> = Promise.resolve();
  #failure: unknown;
  #lost = false;

  constructor(log: RunEventLog, runId: string, fence?: WriterFence) {
    this.#log = log;
    this.#runId = runId;
    this.#fence = fence;
  }

  /** An append was refused: the attempt lost the run's lease. */
  get leaseLost(): boolean {
    return this.#lost;
  }

  /** `data` is serialised now, so later mutation of the graph's objects cannot change what was sent. */
  push(event: string, data: unknown): void {
    this.#add({ event, data: JSON.stringify(data ?? null) });
  }

  /** An event whose data is stored elsewhere already: readers get it through `ref` (`stream/references.ts`). */
  pushReference(event: string, ref: unknown): void {
    this.#add({ event, data: "", ref: JSON.stringify(ref) });
  }

  #add(entry: NewEvent): void {
    if (this.#lost) return;
    this.#buffer.push(entry);
    if (this.#buffer.length === 1) this.#inflight = this.#inflight.then(() => this.#drain());
  }

  async #drain(): Promise<void> {
    const batch = this.#buffer;
    this.#buffer = [];
    if (this.#lost || batch.length === 0) return;
    try {
      if (!(await this.#log.append(this.#runId, batch, undefined, this.#fence?.attempt))) {
        this.#lost = true;
        this.#fence?.onLost();
      }
    } catch (error) {
      this.#failure ??= error;
    }
  }

  /** Resolves once everything pushed so far is stored (or refused: `leaseLost`); rejects if an append failed. */
  async flush(): Promise<void> {
    await this.#inflight;
    if (this.#buffer.length > 0) await this.#drain();
    if (this.#failure !== undefined) throw this.#failure;
  }
}
