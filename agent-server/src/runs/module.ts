import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { ServerModule } from "../app.ts";
import type { ServerContext } from "../context.ts";
import type { RunEventLog } from "../stream/event-log.ts";
import { MaterialisingRunEventLog } from "../stream/references.ts";
import { MemoryThreadStore } from "../threads/memory-store.ts";
import { runQueuePrefix, threadKeys } from "../threads/redis-index.ts";
import { ThreadService } from "../threads/service.ts";
import { runRoutes } from "./http/thread-routes.ts";
import { createRedisRunBackend, type RunBackend } from "./queue/backend.ts";
import { createMemoryRunBackend } from "./queue/memory-backend.ts";
import { RunService } from "./service.ts";
import { type RunSettings, runSettingsFromEnv } from "./settings.ts";
import { RunWorkerPool, type WorkerPoolOptions } from "./worker/worker.ts";

export interface RunsModuleOptions {
  settings?: RunSettings;
  /** Callback handlers added to every run (tracing exporters; tests recording run trees). */
  callbacks?: BaseCallbackHandler[];
  /** Told how each execution in this process ended and how long it took (metrics). */
  onRunExecuted?: WorkerPoolOptions["onExecuted"];
}

export interface RunsModule extends ServerModule {
  /** Available once the module started. */
  service(): RunService;
  /** The runs' event logs (available once started), which the thread-centric protocol streams from. */
  events(): RunEventLog;
  settings: RunSettings;
}

function openBackend(ctx: ServerContext, settings: RunSettings): Promise<RunBackend> | RunBackend {
  const { storage } = ctx.config;
  if (storage.kind === "redis") {
    // Its own connection: sharing the storage one was no faster in `make bench` (within its noise).
    return createRedisRunBackend({
      url: storage.url,
      prefix: runQueuePrefix(storage.prefix),
      threadKey: threadKeys(storage.prefix).record,
      maxLoggedEvents: settings.maxLoggedEvents,
      logger: ctx.logger,
    });
  }
  const { threads } = ctx.storage;
  return createMemoryRunBackend(threads instanceof MemoryThreadStore ? threads : undefined, settings.maxLoggedEvents);
}

/**
 * Runs: their routes, and this process's worker pool (N_WORKERS), started with the server and
 * stopped on shutdown (running runs get the grace period, then go back to the queue).
 */
export function runsModule(options: RunsModuleOptions = {}): RunsModule {
  const settings = options.settings ?? runSettingsFromEnv();
  let started: { backend: RunBackend; pool: RunWorkerPool; service: RunService } | undefined;
  const service = () => {
    if (!started) throw new Error("the runs module has not started");
    return started.service;
  };
  return {
    name: "runs",
    service,
    events: () => {
      if (!started) throw new Error("the runs module has not started");
      return started.backend.events;
    },
    settings,
    async start(ctx) {
      const opened = await openBackend(ctx, settings);
      // Root values events are logged as references to the checkpoints that hold the same state.
      const { checkpointValues } = ctx.storage;
      const backend = { ...opened, events: new MaterialisingRunEventLog(opened.events, checkpointValues) };
      // The runs' view of their threads; a thread deleted through it takes its runs along.
      const threads = new ThreadService(ctx, { onDelete: (threadId) => service().deleteThreadRuns(threadId) });
      const pool = new RunWorkerPool(ctx, backend, {
        threads,
        concurrency: ctx.config.nWorkers,
        leaseMs: settings.leaseMs,
        maxAttempts: settings.maxAttempts,
        pollMs: settings.pollMs,
        callbacks: options.callbacks,
        onExecuted: options.onRunExecuted,
        checkpointValues,
      });
      await pool.start();
      started = { backend, pool, service: new RunService(ctx, backend, threads, pool) };
    },
    routes: (ctx) =>
      runRoutes(service(), { heartbeatMs: settings.heartbeatMs, stallMs: settings.stallMs, logger: ctx.logger }),
    async stop(ctx) {
      if (!started) return;
      await started.pool.stop(ctx.config.shutdownGraceMs);
      await started.backend.close();
      started = undefined;
    },
  };
}
