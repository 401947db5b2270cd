import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** The operator's Prometheus metrics, on a registry of its own (no global default registry). */
export function createMetrics() {
  const registry = new Registry();
  // Event-loop delay sampled every 100 ms, not prom-client's 10: a hundred wake-ups a second
  // were most of what an idle process used.
  collectDefaultMetrics({ register: registry, prefix: "agentplane_operator_", eventLoopMonitoringPrecision: 100 });
  return {
    registry,
    reconciles: new Counter({
      name: "agentplane_operator_reconciles_total",
      help: "Reconciles of AgentDeployments by result",
      labelNames: ["result"] as const,
      registers: [registry],
    }),
    reconcileSeconds: new Histogram({
      name: "agentplane_operator_reconcile_duration_seconds",
      help: "Time spent reconciling one AgentDeployment",
      buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    applies: new Counter({
      name: "agentplane_operator_applies_total",
      help: "Server-side applies of child objects by kind",
      labelNames: ["kind"] as const,
      registers: [registry],
    }),
    statusWrites: new Counter({
      name: "agentplane_operator_status_writes_total",
      help: "Status subresource writes by kind",
      labelNames: ["kind"] as const,
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: "agentplane_operator_workqueue_depth",
      help: "Keys waiting in the work queue",
      registers: [registry],
    }),
    leader: new Gauge({
      name: "agentplane_operator_leader",
      help: "1 while this replica holds the leader lease",
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
