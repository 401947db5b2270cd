import type { Logger } from "@agentplane/common";
import type { Response } from "express";
import { END_EVENT } from "../../stream/event-log.ts";
import { eventStreamMode } from "../../stream/modes.ts";
import { drained, openSse, writeSseEvent, writeSseHeartbeat } from "../../stream/sse.ts";
import type { Run, StreamMode } from "../schemas.ts";
import type { RunService } from "../service.ts";
import { outcomeJson } from "../worker/settle.ts";

export interface RespondOptions {
  /** Extra response headers (`Content-Location`, `Location`). */
  headers: Record<string, string>;
  /** Cancel the run (action interrupt) when the client goes away before it ends. */
  cancelOnDisconnect: boolean;
  /** Silence after which keep-alive bytes are written. */
  heartbeatMs: number;
  /** Where failures that can no longer become an HTTP answer go. */
  logger: Logger;
}

/** An AbortSignal that fires when the client disconnects before `settled()` was called. */
function disconnectSignal(res: Response, onDisconnect: () => void) {
  const controller = new AbortController();
  let settled = false;
  res.on("close", () => {
    if (settled) return;
    controller.abort();
    onDisconnect();
  });
  return {
    signal: controller.signal,
    settled: () => {
      settled = true;
    },
  };
}

function cancelHandler(service: RunService, run: Run, options: RespondOptions): () => void {
  return () => {
    if (!options.cancelOnDisconnect) return;
    service
      .cancel(run, "interrupt")
      .catch((error) => options.logger.warn({ err: error }, "cancel on disconnect failed"));
  };
}

/**
 * Streams the run's events as SSE from after `afterId` (`-1`: all), filtered to `modes` when
 * given (`metadata` and `error` always pass), with heartbeat comments through silences. The log
 * is read only as fast as the client takes the events (`drained`).
 */
export async function respondWithStream(
  service: RunService,
  res: Response,
  run: Run,
  /** `stallMs`: a client that takes none of what was sent for this long is disconnected. */
  options: RespondOptions & { afterId: number; modes?: StreamMode[]; stallMs: number },
): Promise<void> {
  openSse(res, options.headers);
  const filter = options.modes ? new Set<string>(options.modes) : undefined;
  const connection = disconnectSignal(res, cancelHandler(service, run, options));
  // A client dropped for stalling has disconnected: its `close` still cancels when asked to.
  let dropped = false;
  try {
    const items = service.readEvents(run.run_id, {
      afterId: options.afterId,
      signal: connection.signal,
      heartbeatMs: options.heartbeatMs,
    });
    for await (const item of items) {
      let flowing: boolean;
      if ("heartbeat" in item) flowing = writeSseHeartbeat(res);
      else {
        if (item.event === END_EVENT) break;
        const always = item.event === "metadata" || item.event === "error";
        if (filter && !always && !filter.has(eventStreamMode(item.event))) continue;
        flowing = writeSseEvent(res, item.event, item.data, item.id);
      }
      if (!flowing && !(await drained(res, options.stallMs))) {
        dropped = true;
        break;
      }
    }
  } catch (error) {
    options.logger.error({ err: error, run_id: run.run_id }, "streaming a run failed");
  } finally {
    if (!dropped) connection.settled();
    res.end();
  }
}

/**
 * Answers with the run's final values (or `{__error__}`) once it ends. Long waits send the
 * headers early and a newline per silence so proxies keep the connection (leading whitespace
 * is valid JSON).
 */
export async function respondWithOutcome(service: RunService, res: Response, run: Run, options: RespondOptions) {
  const connection = disconnectSignal(res, cancelHandler(service, run, options));
  let started = false;
  const outcome = await service.outcome(run, connection.signal, options.heartbeatMs, () => {
    if (!started) {
      res.writeHead(200, { "Content-Type": "application/json", ...options.headers });
      started = true;
    }
    res.write("\n");
  });
  connection.settled();
  if (!outcome) return;
  const body = outcomeJson(outcome);
  if (!started) res.writeHead(200, { "Content-Type": "application/json", ...options.headers });
  if (typeof body === "string") return void res.end(body);
  // Piece by piece: a long conversation's JSON is one of them, sent without copying it again.
  for (const part of body) res.write(part);
  res.end();
}
