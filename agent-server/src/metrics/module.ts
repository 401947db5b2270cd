import { type AnyRoute, defineRoute } from "@agentplane/common";
import type { ErrorRequestHandler, RequestHandler } from "express";
import { z } from "zod";
import type { ServerModule } from "../app.ts";
import type { RunService } from "../runs/service.ts";
import { ServerMetrics } from "./registry.ts";

/** Times every request; labelled by the matched route pattern so ids do not explode the series. */
function timeRequests(metrics: ServerMetrics): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    res.once("finish", () => {
      const route = req.route?.path;
      metrics.httpDuration.observe(
        {
          method: req.method,
          route: typeof route === "string" ? route : "unmatched",
          status: String(res.statusCode),
        },
        (performance.now() - started) / 1000,
      );
    });
    next();
  };
}

function countRedisErrors(metrics: ServerMetrics): ErrorRequestHandler {
  const countRedisError = metrics.redisErrorCounter("http");
  return (error, _req, _res, next) => {
    countRedisError(error);
    next(error);
  };
}

function metricsRoute(metrics: ServerMetrics): AnyRoute {
  return defineRoute({
    method: "get",
    path: "/metrics",
    operationId: "metrics",
    tag: "System",
    summary: "Prometheus metrics: HTTP latency, runs by status, queue depth, run latency, Redis errors",
    query: z.object({ format: z.enum(["prometheus"]).optional() }),
    handler: async ({ res }) => {
      res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    },
  });
}

export interface MetricsModule extends ServerModule {
  metrics: ServerMetrics;
}

/** `/metrics` of this server instance; pass `metrics.recordRun` to the runs module as `onRunExecuted`. */
export function metricsModule(runs: () => RunService, metrics = new ServerMetrics()): MetricsModule {
  return {
    name: "metrics",
    metrics,
    start() {
      // Counted by the store (ZCARD on Redis): a scrape costs the same with 100,000 queued runs.
      metrics.readInflightWith(() => runs().inflightCounts());
    },
    observe: () => ({ request: timeRequests(metrics), error: countRedisErrors(metrics) }),
    routes: () => [metricsRoute(metrics)],
  };
}
