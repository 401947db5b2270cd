import { END_EVENT, type LoggedEvent, pageBytes, type RunEventLog } from "./event-log.ts";

export type StreamItem = LoggedEvent | { heartbeat: true };

export interface ReadOptions {
  /** Id of the last event the client already has (`-1`: everything). */
  afterId: number;
  signal: AbortSignal;
  /** Silence after which a heartbeat is yielded. */
  heartbeatMs: number;
  /** Asked after each silence: true when the run can produce nothing more (deleted, or never executed). */
  isOver: () => Promise<boolean>;
}

/** Most events read from the log in one call. */
const PAGE = 500;
/**
 * Most bytes of event data read in one call. What a reader holds is one page: with a client that
 * writes only as fast as it is read (`drained`), this bounds a stream's memory however long the
 * run's log is.
 */
const PAGE_BYTES = 1 << 18;

/** `error` of the event a reader gets in place of events its log no longer holds. */
export const EVENTS_DROPPED = "EventsDropped";

/**
 * The ids after `afterId` that the log dropped (its entry cap) before `first`, the oldest entry
 * it holds; undefined when none. A log that starts at a retried attempt's marker (`metadata`,
 * see `RunEventLog.startAttempt`) dropped nothing a client needs.
 */
export function droppedIds(first: LoggedEvent, afterId: number): { from: number; to: number } | undefined {
  if (first.id <= afterId + 1 || first.event === "metadata") return undefined;
  return { from: afterId + 1, to: first.id - 1 };
}

/**
 * Stands in for the events `droppedIds` finds: an `error` event (with the id before `first`, so
 * resuming from it reads on without a gap), after which reading continues from `first`.
 */
function droppedBefore(first: LoggedEvent, afterId: number): LoggedEvent | undefined {
  const dropped = droppedIds(first, afterId);
  if (!dropped) return undefined;
  const message = `Events ${dropped.from} to ${dropped.to} of this stream were dropped (its log keeps only the latest events); continuing from event ${first.id}`;
  return { id: first.id - 1, event: "error", data: JSON.stringify({ error: EVENTS_DROPPED, message }) };
}

/**
 * The events of a run from `afterId` on, live: waits for appends (from any process) and ends
 * after the `__end__` entry, which it yields too so callers can read the run's result. Where
 * the log no longer holds the events asked for, an `error` event says so first (`droppedBefore`).
 */
export async function* readRunEvents(
  log: RunEventLog,
  runId: string,
  options: ReadOptions,
): AsyncGenerator<StreamItem> {
  const { signal, heartbeatMs } = options;
  let appended = false;
  let wakeUp: (() => void) | undefined;
  const unwatch = await log.watch(runId, () => {
    appended = true;
    wakeUp?.();
  });
  try {
    let after = options.afterId;
    while (!signal.aborted) {
      appended = false;
      const events = await log.range(runId, after, PAGE, PAGE_BYTES);
      const dropped = events[0] && droppedBefore(events[0], after);
      if (dropped) yield dropped;
      let bytes = 0;
      for (const event of events) {
        yield event;
        if (event.event === END_EVENT) return;
        after = event.id;
        bytes += pageBytes(event);
      }
      if (events.length === PAGE || bytes >= PAGE_BYTES || appended) continue;
      const woken = await new Promise<boolean>((resolve) => {
        const done = (value: boolean) => {
          clearTimeout(timer);
          signal.removeEventListener("abort", onAbort);
          wakeUp = undefined;
          resolve(value);
        };
        const onAbort = () => done(false);
        const timer = setTimeout(() => done(false), heartbeatMs);
        signal.addEventListener("abort", onAbort, { once: true });
        wakeUp = () => done(true);
        // Aborted while the consumer held the last event: no abort event will come any more.
        if (signal.aborted) done(false);
      });
      if (woken || signal.aborted) continue;
      if (await options.isOver()) return;
      yield { heartbeat: true };
    }
  } finally {
    await unwatch();
  }
}
