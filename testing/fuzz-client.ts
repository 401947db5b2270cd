/**
 * The fuzz tests' client: sends generated requests over kept-alive connections without ever
 * throwing, and the few well-formed calls they make around them.
 */

import http from "node:http";
import type { FuzzRequest } from "./openapi-fuzz.ts";

export interface Answer {
  status: number | "timeout" | "network";
  /** The body of a 5xx, or the error of a failed request. */
  detail?: string;
}

/**
 * Connections kept open between requests: each concurrent sender reuses one (no handshake per
 * request), and plain `node:http` costs the client about a third less CPU a request than `fetch`.
 */
const keepAlive = new http.Agent({ keepAlive: true });

/** Sends `request` to the server at `baseUrl`, within `timeoutMs` in all; never throws. */
export function send(baseUrl: string, request: FuzzRequest, timeoutMs = 5_000): Promise<Answer> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    // Set when this client gives up: the error that follows is its own doing, not the server's
    // (an answer that streams for longer, e.g. a thread's stream of its future runs, is cut so).
    let timedOut = false;
    const fail = (status: "timeout" | "network", error: unknown) => {
      clearTimeout(timer);
      resolve({ status, detail: String(error) });
    };
    try {
      const headers: Record<string, string | number> = request.contentType
        ? { "content-type": request.contentType }
        : {};
      // Explicit: node:http frames a DELETE's body by neither length nor chunks, which the server
      // would read as the start of the connection's next request.
      if (request.body !== undefined) headers["content-length"] = Buffer.byteLength(request.body);
      const req = http.request(
        `${baseUrl}${request.url}`,
        { method: request.method, headers, agent: keepAlive },
        (res) => {
          const status = res.statusCode ?? 0;
          // Only a 5xx body is kept (for the failure message); others are read and dropped.
          let detail = "";
          res.on("data", (chunk: Buffer) => {
            if (status >= 500 && detail.length < 300) detail += chunk.toString("utf8");
          });
          res.on("end", () => {
            clearTimeout(timer);
            resolve({ status, detail: status >= 500 ? detail.slice(0, 300) : undefined });
          });
          res.on("error", (error) => fail(timedOut ? "timeout" : "network", error));
        },
      );
      timer = setTimeout(() => {
        timedOut = true;
        req.destroy();
      }, timeoutMs);
      req.on("error", (error) => fail(timedOut ? "timeout" : "network", error));
      req.end(request.body);
    } catch (error) {
      fail("network", error);
    }
  });
}

/** A JSON request that must succeed; answers the parsed body (`{}` for 204). */
export async function call(baseUrl: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return (response.status === 204 ? {} : response.json()) as Promise<Record<string, unknown>>;
}

/**
 * Polls until no thread of the server is busy; answers the busy threads left at the deadline,
 * each with its runs, so a failure says which request left it so.
 */
export async function busyThreadsAfter(baseUrl: string, timeoutMs: number): Promise<unknown[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const busy = (await call(baseUrl, "POST", "/threads/search", { status: "busy", limit: 100 })) as unknown as {
      thread_id: string;
      metadata: unknown;
    }[];
    if (busy.length === 0) return busy;
    if (Date.now() > deadline) {
      return Promise.all(
        busy.map(async ({ thread_id, metadata }) => ({
          thread_id,
          metadata,
          runs: await fetch(`${baseUrl}/threads/${thread_id}/runs`).then((r) => r.json()),
        })),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
