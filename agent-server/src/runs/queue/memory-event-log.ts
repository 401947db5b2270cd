import type { EventEmitter } from "node:events";
import { END_EVENT, type LoggedEvent, type NewEvent, type RunEventLog } from "../../stream/event-log.ts";

/**
 * The run event logs in process memory (`agent-server dev`), capped like the Redis ones; appends
 * signal `events:<runId>` on the backend's emitter.
 */
export class MemoryRunEventLog implements RunEventLog {
  readonly #logs = new Map<string, LoggedEvent[]>();
  readonly #signals: EventEmitter;
  readonly #maxEvents: number;
  /** Whether an attempt holds its run's lease; fenced appends are refused otherwise. */
  #owns: (runId: string, attempt: number) => boolean = () => true;

  constructor(signals: EventEmitter, maxEvents: number) {
    this.#signals = signals;
    this.#maxEvents = maxEvents;
  }

  bindRuns(store: { owns(runId: string, attempt: number): boolean }): void {
    this.#owns = (runId, attempt) => store.owns(runId, attempt);
  }

  async append(runId: string, events: NewEvent[], expireSeconds?: number, attempt?: number): Promise<boolean> {
    if (attempt !== undefined && !this.#owns(runId, attempt)) return false;
    const log = this.#logs.get(runId) ?? [];
    for (const event of events) log.push({ id: (log.at(-1)?.id ?? -1) + 1, ...event });
    // The oldest entries beyond the cap go, as in Redis (`RedisRunEventLog`).
    this.#logs.set(runId, log.length > this.#maxEvents ? log.slice(-this.#maxEvents) : log);
    if (expireSeconds !== undefined) setTimeout(() => this.#logs.delete(runId), expireSeconds * 1000).unref();
    this.#signals.emit(
      `events:${runId}`,
      events.some(({ event }) => event === END_EVENT),
    );
    return true;
  }

  async range(runId: string, afterId: number, count: number, maxBytes = Infinity): Promise<LoggedEvent[]> {
    const page: LoggedEvent[] = [];
    let budget = maxBytes;
    // Ids start after the entries a retried attempt dropped (`startAttempt`).
    const log = this.#logs.get(runId) ?? [];
    for (const event of log.filter(({ id }) => id > afterId).slice(0, count)) {
      page.push(event);
      budget -= event.data.length;
      if (budget <= 0) break;
    }
    return page;
  }

  async startAttempt(runId: string, marker: NewEvent, attempt?: number): Promise<boolean> {
    if (!(await this.append(runId, [marker], undefined, attempt))) return false;
    const log = this.#logs.get(runId) ?? [];
    this.#logs.set(runId, log.slice(-1));
    return true;
  }

  async last(runId: string): Promise<LoggedEvent | undefined> {
    return this.#logs.get(runId)?.at(-1);
  }

  async delete(runIds: string[]): Promise<void> {
    for (const runId of runIds) this.#logs.delete(runId);
  }

  async watch(runId: string, listener: (ended: boolean) => void): Promise<() => Promise<void>> {
    this.#signals.on(`events:${runId}`, listener);
    return async () => {
      this.#signals.off(`events:${runId}`, listener);
    };
  }
}
