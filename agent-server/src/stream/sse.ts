import type { Response } from "express";

/** Starts an SSE response: headers flushed at once so clients see the stream open. */
export function openSse(res: Response, headers: Record<string, string> = {}): void {
  res.writeHead(200, {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    Connection: "keep-alive",
    "X-Accel-Buffering": "no",
    ...headers,
  });
  res.flushHeaders();
}

/**
 * `event:`, single-line JSON `data:` and optional `id:` lines, then the blank line. False when
 * the response buffer is full: the caller must wait for `drained` before writing more.
 */
export function writeSseEvent(res: Response, event: string, data: string, id?: number | string): boolean {
  return res.write(
    id === undefined ? `event: ${event}\ndata: ${data}\n\n` : `event: ${event}\ndata: ${data}\nid: ${id}\n\n`,
  );
}

/**
 * A comment line with no blank line after it: ignored by clients, keeps proxies from closing an
 * idle stream. A blank line would end an (empty) event, and decoders that keep the last event id
 * across events, as the LangGraph SDK's does, hand that to the application as an event named "".
 */
export const SSE_HEARTBEAT = ": heartbeat\n";

/** Writes `SSE_HEARTBEAT`. False: see `writeSseEvent`. */
export function writeSseHeartbeat(res: Response): boolean {
  return res.write(SSE_HEARTBEAT);
}

/**
 * After a write returned false: resolves true once the client has taken what was buffered, false
 * when it went away or took nothing for `stallMs`. A stalled client's connection is destroyed, so
 * its buffered events are freed and the response's `close` fires. Waiting here instead of writing
 * on keeps each client's buffer at one event: a client that stops reading costs the server
 * nothing beyond that, however long the run's stream.
 */
export function drained(res: Response, stallMs: number): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return Promise.resolve(false);
  if (!res.writableNeedDrain) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      res.off("drain", onDrain);
      res.off("close", onClose);
      if (!ok) res.destroy();
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const timer = setTimeout(() => done(false), stallMs);
    res.on("drain", onDrain);
    res.on("close", onClose);
  });
}
