import type { ServerModule } from "../app.ts";
import { type ThreadRoutesOptions, threadRemover, threadRoutes } from "./routes.ts";
import { threadStateRoutes } from "./state-routes.ts";
import { readThreadTtlSettings, ThreadTtlSweeper } from "./ttl.ts";

/**
 * Thread, state and history routes, and the sweeper that applies thread TTLs; `onDelete` lets
 * the runs of a deleted thread go with it.
 */
export function threadsModule(options: ThreadRoutesOptions = {}): ServerModule {
  let sweeper: ThreadTtlSweeper | undefined;
  return {
    name: "threads",
    routes: (ctx) => [...threadRoutes(ctx, options), ...threadStateRoutes(ctx)],
    start: (ctx) => {
      sweeper = new ThreadTtlSweeper(ctx, threadRemover(ctx, options));
      sweeper.start(readThreadTtlSettings(ctx.config.configPath).sweepIntervalMs);
    },
    stop: () => sweeper?.stop(),
  };
}
