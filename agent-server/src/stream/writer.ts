import type { NewEvent, RunEventLog } from "./event-log.ts";

/**
 * Appends a run's events to its log in production order without making the graph wait for
 * Redis: events pushed while one append is in flight go out together in the next one.
 */
export class RunEventWriter {
  readonly #log: RunEventLog;
  readonly #runId: string;
  #buffer: NewEvent[] = [];
  #inflight: Promise<void> = Promise.resolve();
  #failure: unknown;

  constructor(log: RunEventLog, runId: string) {
    this.#log = log;
    this.#runId = runId;
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
    this.#buffer.push(entry);
    if (this.#buffer.length === 1) this.#inflight = this.#inflight.then(() => this.#drain());
  }

  async #drain(): Promise<void> {
    const batch = this.#buffer;
    this.#buffer = [];
    try {
      await this.#log.append(this.#runId, batch);
    } catch (error) {
      this.#failure ??= error;
    }
  }

  /** Resolves once everything pushed so far is stored; rejects if an append failed. */
  async flush(): Promise<void> {
    await this.#inflight;
    if (this.#buffer.length > 0) await this.#drain();
    if (this.#failure !== undefined) throw this.#failure;
  }
}
