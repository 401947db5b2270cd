import type { Logger } from "@agentplane/common";
import type { Response } from "express";
import { END_EVENT, type LoggedEvent } from "../../stream/event-log.ts";
import { drained, openSse, writeSseEvent, writeSseHeartbeat } from "../../stream/sse.ts";
import type { Run, ThreadStreamMode } from "../schemas.ts";
import type { RunService } from "../service.ts";

/** Runs of the thread looked at on each poll (newest first). */
const RECENT_RUNS = 50;

/** Sent after the last event of each run (`run_modes`, `lifecycle`): `{run_id, status}`. */
const RUN_DONE_EVENT = "run_done";

/** Which run events each thread stream mode passes; `run_done` goes to `run_modes` and `lifecycle`. */
const PASSES: Record<ThreadStreamMode, (event: string) => boolean> = {
  run_modes: () => true,
  lifecycle: (event) => event === "metadata",
  state_update: (event) => event === "values",
};

/** SSE id of a thread stream event: the run and the event's position in that run's log. */
const eventId = (runId: string, id: number) => `${runId}:${id}`;

/**
 * Where a (re)connecting client starts: `-` replays every recent run; `<run id>:<n>` resumes
 * after event n of that run; none (or an id of a run no longer known) starts with the runs in
 * flight now.
 */
function resumePoint(
  lastEventId: string | undefined,
  oldestFirst: readonly Run[],
): { seen: Set<string>; afterId: Map<string, number> } {
  const finished = () =>
    new Set(oldestFirst.filter((run) => run.status !== "pending" && run.status !== "running").map((run) => run.run_id));
  if (lastEventId === "-") return { seen: new Set(), afterId: new Map() };
  const separator = lastEventId?.lastIndexOf(":") ?? -1;
  const runId = lastEventId?.slice(0, separator);
  const id = Number(lastEventId?.slice(separator + 1));
  const index = oldestFirst.findIndex((run) => run.run_id === runId);
  if (separator < 0 || !Number.isInteger(id) || index < 0) return { seen: finished(), afterId: new Map() };
  return {
    seen: new Set(oldestFirst.slice(0, index).map((run) => run.run_id)),
    afterId: new Map([[runId as string, id]]),
  };
}

export interface ThreadStreamOptions {
  heartbeatMs: number;
  /** A client that takes none of what was sent for this long is disconnected. */
  stallMs: number;
  modes: ThreadStreamMode[];
  /** The `Last-Event-ID` header. */
  lastEventId?: string;
  logger: Logger;
}

/**
 * `GET /threads/{id}/stream`: the events of the thread's runs, in arrival order, one run after
 * the other, until the client disconnects; ids are `<run id>:<position>` so a reconnect resumes
 * where it stopped. It looks for new runs when the queue signals activity on the thread (or
 * after a heartbeat). Logs are read only as fast as the client takes the events (`drained`).
 */
export async function streamThread(service: RunService, res: Response, threadId: string, options: ThreadStreamOptions) {
  const { heartbeatMs } = options;
  const passes = (event: string) => options.modes.some((mode) => PASSES[mode](event));
  const announcesEnd = options.modes.includes("run_modes") || options.modes.includes("lifecycle");
  let wake: (() => void) | undefined;
  let active = false;
  // Before the SSE headers: an unknown thread is still a 404.
  const unwatch = await service.watchThread(threadId, () => {
    active = true;
    wake?.();
  });
  openSse(res);
  const controller = new AbortController();
  res.on("close", () => controller.abort());
  const recent = () => service.recent(threadId, RECENT_RUNS);
  const { seen, afterId } = resumePoint(options.lastEventId, await recent());
  /** False when the response buffer is full (see `writeSseEvent`). */
  const write = (runId: string, item: LoggedEvent): boolean => {
    if (item.event !== END_EVENT) {
      return passes(item.event) ? writeSseEvent(res, item.event, item.data, eventId(runId, item.id)) : true;
    }
    if (!announcesEnd) return true;
    const { status } = JSON.parse(item.data) as { status: string };
    return writeSseEvent(res, RUN_DONE_EVENT, JSON.stringify({ run_id: runId, status }), eventId(runId, item.id));
  };
  let idleSince = Date.now();
  try {
    while (!controller.signal.aborted) {
      const next = (await recent()).find((run) => !seen.has(run.run_id));
      if (!next) {
        if (Date.now() - idleSince >= heartbeatMs) {
          if (!writeSseHeartbeat(res) && !(await drained(res, options.stallMs))) break;
          idleSince = Date.now();
        }
        if (active) {
          active = false;
          continue;
        }
        await new Promise<void>((resolve) => {
          const { signal } = controller;
          const timer = setTimeout(done, heartbeatMs);
          function done() {
            clearTimeout(timer);
            signal.removeEventListener("abort", done);
            resolve();
          }
          wake = done;
          signal.addEventListener("abort", done, { once: true });
        });
        wake = undefined;
        continue;
      }
      seen.add(next.run_id);
      const after = afterId.get(next.run_id) ?? -1;
      const last = await service.lastEvent(next.run_id);
      // Resuming after a run's last event, or its log expired: nothing of it is left to send.
      if (last?.event === END_EVENT && last.id <= after) continue;
      if (!last && next.status !== "pending" && next.status !== "running") continue;
      const items = service.readEvents(next.run_id, { afterId: after, signal: controller.signal, heartbeatMs });
      for await (const item of items) {
        const flowing = "heartbeat" in item ? writeSseHeartbeat(res) : write(next.run_id, item);
        if (!flowing && !(await drained(res, options.stallMs))) {
          controller.abort();
          break;
        }
      }
      idleSince = Date.now();
    }
  } catch (error) {
    options.logger.error({ err: error, thread_id: threadId }, "streaming a thread failed");
  } finally {
    await unwatch();
    res.end();
  }
}
