import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Metrics } from "./metrics.ts";

export interface HealthChecks {
  /** Liveness: false when the process should be restarted (e.g. the leader lease is not being renewed). */
  alive(): boolean;
  /** Readiness: caches are primed. */
  ready(): boolean;
}

/** `/healthz`, `/readyz` and `/metrics` on a small plain HTTP server. */
export async function startHealthServer(
  port: number,
  host: string,
  checks: HealthChecks,
  metrics: Metrics,
): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const reply = (code: number, body: string, type = "text/plain") => {
      res.writeHead(code, { "content-type": type }).end(body);
    };
    if (req.method !== "GET") return reply(405, "method not allowed");
    if (path === "/healthz") return checks.alive() ? reply(200, "ok") : reply(503, "unhealthy");
    if (path === "/readyz") return checks.ready() ? reply(200, "ok") : reply(503, "not ready");
    if (path === "/metrics") {
      void metrics.registry.metrics().then(
        (text) => reply(200, text, metrics.registry.contentType),
        () => reply(500, "metrics unavailable"),
      );
      return;
    }
    reply(404, "not found");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
