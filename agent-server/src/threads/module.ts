import type { ServerModule } from "../app.ts";
import { threadRoutes } from "./routes.ts";
import { ThreadService, type ThreadServiceOptions } from "./service.ts";
import { threadStateRoutes } from "./state-routes.ts";
import { readThreadTtlSettings, ThreadTtlSweeper } from "./ttl.ts";

export interface ThreadsModule extends ServerModule {
  /** Available once the module started. */
  service(): ThreadService;
}

/**
 * Thread, state and history routes, and the sweeper that applies thread TTLs; `onDelete` lets
 * the runs of a deleted thread go with it.
 */
export function threadsModule(options: ThreadServiceOptions = {}): ThreadsModule {
  let started: { service: ThreadService; sweeper: ThreadTtlSweeper } | undefined;
  const service = () => {
    if (!started) throw new Error("the threads module has not started");
    return started.service;
  };
  return {
    name: "threads",
    service,
    routes: () => [...threadRoutes(service()), ...threadStateRoutes(service())],
    start: (ctx) => {
      const threads = new ThreadService(ctx, options);
      const sweeper = new ThreadTtlSweeper(ctx, threads);
      sweeper.start(readThreadTtlSettings(ctx.config.configPath).sweepIntervalMs);
      started = { service: threads, sweeper };
    },
    stop: () => started?.sweeper.stop(),
  };
}
