import type { ServerModule } from "../app.ts";
import { readHttpSection } from "../http/section.ts";
import { jsonRpcParseErrors } from "../mcp/module.ts";
import { type A2AServices, a2aRoutes } from "./routes.ts";

/** A2A endpoints, unless `langgraph.json` sets `http.disable_a2a`. */
export function a2aModule(services: A2AServices): ServerModule {
  return {
    name: "a2a",
    routes: (ctx) => (readHttpSection(ctx.config.configPath).disable_a2a ? [] : a2aRoutes(ctx, services)),
    observe: () => ({ error: jsonRpcParseErrors("/a2a/") }),
  };
}
