import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import {
  ClientClosedError,
  ClientOfflineError,
  ConnectionTimeoutError,
  ErrorReply,
  ReconnectStrategyError,
  SocketClosedUnexpectedlyError,
} from "redis";

const REDIS_ERRORS = [
  ClientClosedError,
  ClientOfflineError,
  ConnectionTimeoutError,
  ErrorReply,
  ReconnectStrategyError,
  SocketClosedUnexpectedlyError,
];

export const isRedisError = (error: unknown): boolean => REDIS_ERRORS.some((type) => error instanceof type);

/** Counts of the deployment's queued and running runs, read at scrape time. */
export type InflightReader = () => Promise<{ pending: number; running: number }>;

export type RunMetricStatus = "success" | "error" | "interrupted";

/**
 * How often the event-loop delay histogram (`agentplane_nodejs_eventloop_lag_*`) takes a sample.
 * prom-client's default, 10 ms, woke an idle server 100 times a second: about half of the
 * 7 – 8 ms of CPU a second it used doing nothing (on every replica of every deployment). Every
 * stall this long or longer is still seen; a shorter one in proportion to its length.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * The Prometheus metrics of one server instance, on its own registry (never the global
 * default, so several servers in one process do not mix their figures).
 */
export class ServerMetrics {
  readonly registry = new Registry();
  readonly httpDuration: Histogram<"method" | "route" | "status">;
  readonly runsFinished: Counter<"status">;
  readonly runDuration: Histogram<"status">;
  readonly redisErrors: Counter<"source">;
  readonly cronClaims: Counter<"outcome">;
  #inflight: InflightReader | undefined;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({
      register: this.registry,
      prefix: "agentplane_",
      eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS,
    });
    this.httpDuration = new Histogram({
      name: "agentplane_http_request_duration_seconds",
      help: "HTTP request latency by route pattern, method and status",
      labelNames: ["method", "route", "status"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.runsFinished = new Counter({
      name: "agentplane_runs_finished_total",
      help: "Runs this process executed, by outcome",
      labelNames: ["status"],
      registers,
    });
    this.runDuration = new Histogram({
      name: "agentplane_run_duration_seconds",
      help: "Execution time of runs this process executed, by outcome",
      labelNames: ["status"],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
      registers,
    });
    this.redisErrors = new Counter({
      name: "agentplane_redis_errors_total",
      help: "Redis command or connection failures seen by request handlers, the cron scheduler and the metrics reader",
      labelNames: ["source"],
      registers,
    });
    this.cronClaims = new Counter({
      name: "agentplane_cron_claims_total",
      help: "Due cron slots this process tried to claim: won (it fired the run) or lost (another replica did)",
      labelNames: ["outcome"],
      registers,
    });
    const metrics = this;
    new Gauge({
      name: "agentplane_runs_inflight",
      help: "Runs of the deployment waiting (pending) or executing (running)",
      labelNames: ["status"],
      registers,
      async collect() {
        const counts = await metrics.#readInflight();
        if (!counts) return;
        this.set({ status: "pending" }, counts.pending);
        this.set({ status: "running" }, counts.running);
      },
    });
    new Gauge({
      name: "agentplane_run_queue_depth",
      help: "Runs of the deployment waiting to be executed",
      registers,
      async collect() {
        const counts = await metrics.#readInflight();
        if (counts) this.set(counts.pending);
      },
    });
  }

  /** Counts `error` under `source` when it is a Redis failure (for components that catch their own errors). */
  redisErrorCounter(source: string): (error: unknown) => void {
    return (error) => {
      if (isRedisError(error)) this.redisErrors.inc({ source });
    };
  }

  /** Set once the runs module started. */
  readInflightWith(reader: InflightReader): void {
    this.#inflight = reader;
  }

  async #readInflight() {
    try {
      return await this.#inflight?.();
    } catch (error) {
      if (isRedisError(error)) this.redisErrors.inc({ source: "metrics" });
      return undefined;
    }
  }

  /** Counts and times one run this process executed; `status` is success, error or interrupted. */
  recordRun(status: RunMetricStatus, seconds: number): void {
    this.runsFinished.inc({ status });
    this.runDuration.observe({ status }, seconds);
  }
}
