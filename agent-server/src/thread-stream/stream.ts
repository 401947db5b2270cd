import type { Logger } from "@agentplane/common";
import type { Response } from "express";
import type { RunService } from "../runs/service.ts";
import { END_EVENT, type LoggedEvent, type RunEventLog } from "../stream/event-log.ts";
import { EVENTS_DROPPED, readRunEvents } from "../stream/reader.ts";
import { drained, openSse, SSE_HEARTBEAT } from "../stream/sse.ts";
import { type EventFilter, fromSeq, matchesFilter, type SentEvent, toProtocolEvent } from "./events.ts";
import { type IndexedRun, runIndexId } from "./service.ts";

export interface EventStreamOptions {
  heartbeatMs: number;
  /** A client that takes none of what was sent for this long is disconnected. */
  stallMs: number;
  logger: Logger;
}

/**
 * Where reading starts for a stream that wants the events after sequence number `after` (-1:
 * all): the ordinal of the first run to read and the log position after which to read it.
 */
function startPoint(after: number): { ordinal: number; position: number } {
  const next = fromSeq(after + 1);
  return next.ordinal < 1 ? { ordinal: 1, position: -1 } : { ordinal: next.ordinal, position: next.position - 1 };
}

/**
 * Events the logs no longer hold (they keep each run's latest, `RUN_EVENT_LOG_MAX_EVENTS`, and a
 * thread's latest runs): said once where they were, then the stream goes on with what is kept.
 */
export interface DroppedEvents {
  dropped: string;
}

export type ProtocolItem = SentEvent | { heartbeat: true } | DroppedEvents;

/** The reader's stand-in for events its log dropped (`stream/reader.ts`), as a protocol item. */
function droppedItem(entry: LoggedEvent): DroppedEvents | undefined {
  if (entry.event !== "error") return undefined;
  const { error, message } = JSON.parse(entry.data) as { error?: string; message?: string };
  return error === EVENTS_DROPPED ? { dropped: message ?? error } : undefined;
}

/**
 * Every protocol event of the thread after sequence number `after`, in order, live, until
 * `signal` aborts, with a heartbeat item whenever nothing happened for `heartbeatMs`. Everything
 * is read from Redis (the thread's run list, then each run's log in turn), so any replica serves
 * any stream while a third executes the run; the consumer pulls, so a slow one holds at most one
 * page of one log.
 */
export async function* protocolEvents(
  runs: RunService,
  events: RunEventLog,
  threadId: string,
  after: number,
  options: { signal: AbortSignal; heartbeatMs: number },
): AsyncGenerator<ProtocolItem> {
  const { signal, heartbeatMs } = options;
  const start = startPoint(after);
  // The run list, live: entries appended later (new runs, from any replica) arrive here too.
  const listed = readRunEvents(events, runIndexId(threadId), {
    afterId: start.ordinal - 2,
    signal,
    heartbeatMs,
    isOver: async () => false,
  });
  for await (const entry of listed) {
    if ("heartbeat" in entry) {
      yield entry;
      continue;
    }
    if (entry.event !== "run") {
      // The thread's run list dropped its earliest runs: their events are gone too.
      if (droppedItem(entry)) yield { dropped: "The thread's earliest runs were dropped from its run list" };
      continue;
    }
    const ordinal = entry.id + 1;
    const run = JSON.parse(entry.data) as IndexedRun;
    const position = ordinal === start.ordinal ? start.position : -1;
    const last = await runs.lastEvent(run.run_id);
    // Resuming after the run's end, or its log expired: nothing of it is left to send.
    if (last?.event === END_EVENT && last.id <= position) continue;
    if (!last && (await runs.isOver(run.run_id))) continue;
    for await (const item of runs.readEvents(run.run_id, { afterId: position, signal, heartbeatMs })) {
      if ("heartbeat" in item) {
        yield item;
        continue;
      }
      const sent = droppedItem(item) ?? toProtocolEvent(ordinal, run.graph_id, item);
      if (sent) yield sent;
    }
  }
}

/**
 * `POST /threads/{id}/stream/events`: the thread's protocol events that pass `filter`, from its
 * first protocol run (or after `since`) on, live, until the client disconnects. Logs are read
 * only as fast as the client takes the events: a client that stops reading holds one page of
 * one log until `stallMs`, then is cut off.
 */
export async function streamProtocolEvents(
  runs: RunService,
  events: RunEventLog,
  res: Response,
  threadId: string,
  filter: EventFilter,
  options: EventStreamOptions,
): Promise<void> {
  const { heartbeatMs, stallMs } = options;
  const controller = new AbortController();
  res.on("close", () => controller.abort());
  const { signal } = controller;
  openSse(res);
  /** Writes, then waits while the response buffer is full; false once the client is gone or stalled. */
  const write = async (text: string) => res.write(text) || (await drained(res, stallMs));
  try {
    for await (const item of protocolEvents(runs, events, threadId, filter.since ?? -1, { signal, heartbeatMs })) {
      if ("heartbeat" in item) {
        if (!(await write(SSE_HEARTBEAT))) return;
      } else if ("dropped" in item) {
        const data = JSON.stringify({ error: EVENTS_DROPPED, message: item.dropped });
        if (!(await write(`event: error\ndata: ${data}\n\n`))) return;
      } else if (matchesFilter(filter, item.event)) {
        const text = `id: ${item.event.event_id}\nevent: ${item.event.method}\ndata: ${item.json}\n\n`;
        if (!(await write(text))) return;
      }
    }
  } catch (error) {
    options.logger.error({ err: error, thread_id: threadId }, "streaming protocol events failed");
  } finally {
    controller.abort();
    res.end();
  }
}
