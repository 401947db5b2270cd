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

/** `event:`, single-line JSON `data:` and optional `id:` lines, then the blank line. */
export function writeSseEvent(res: Response, event: string, data: string, id?: number | string): void {
  res.write(id === undefined ? `event: ${event}\ndata: ${data}\n\n` : `event: ${event}\ndata: ${data}\nid: ${id}\n\n`);
}

/** Comment line: ignored by clients, keeps proxies from closing an idle stream. */
export function writeSseHeartbeat(res: Response): void {
  res.write(": heartbeat\n\n");
}
