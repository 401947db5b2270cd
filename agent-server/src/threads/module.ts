import type { ServerModule } from "../app.ts";
import { type ThreadRoutesOptions, threadRoutes } from "./routes.ts";
import { threadStateRoutes } from "./state-routes.ts";

/** Thread, state and history routes; `onDelete` lets the runs of a deleted thread go with it. */
export function threadsModule(options: ThreadRoutesOptions = {}): ServerModule {
  return { name: "threads", routes: (ctx) => [...threadRoutes(ctx, options), ...threadStateRoutes(ctx)] };
}
