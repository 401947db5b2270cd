import { type AnyRoute, buildOpenApi, defineRoute, type SecurityScheme } from "@agentplane/common";
import { z } from "zod";
import type { ServerContext } from "../context.ts";
import { QueryBoolean } from "../http/query.ts";
import { apiSchemas } from "../schemas/registry.ts";
import { langSmithTracingEnabled } from "../tracing/module.ts";
import { installedVersion, serverVersion } from "./versions.ts";

const TAG = "System";

const API_KEY_SCHEME: SecurityScheme = {
  name: "ApiKeyAuth",
  scheme: { type: "apiKey", in: "header", name: "x-api-key" },
};

const ServerInfo = z.object({
  version: z.string(),
  langgraph_js_version: z.string(),
  context: z.literal("js"),
  flags: z.record(z.string(), z.boolean()),
});

/** Features are reported by what is actually mounted, so `/info` stays truthful as route groups are added. */
function featureFlags(routes: AnyRoute[], semanticSearch: boolean, tracing: boolean): Record<string, boolean> {
  const mounted = (prefix: string) => routes.some((route) => route.path.startsWith(prefix));
  return {
    assistants: mounted("/assistants"),
    threads: mounted("/threads"),
    runs: mounted("/runs") || routes.some((route) => route.path.includes("/runs")),
    crons: mounted("/runs/crons") || routes.some((route) => route.path.includes("/runs/crons")),
    store: mounted("/store"),
    // Search ranks by `query` only when langgraph.json gives the store an index.
    store_semantic_search: mounted("/store") && semanticSearch,
    a2a: mounted("/a2a"),
    mcp: mounted("/mcp"),
    metrics: mounted("/metrics"),
    // The thread-centric protocol of SDK ≥ 1.13 (`client.threads.stream`), over SSE only.
    thread_stream: routes.some((route) => route.path.endsWith("/stream/events")),
    // Runs are traced to LangSmith; per-run `langsmith_tracer` replicas are not supported.
    langsmith: tracing,
    langsmith_tracing_replicas: false,
  };
}

/**
 * `/ok`, `/info` and `/openapi.json`. `allRoutes` returns every mounted route (these included),
 * so the document describes exactly what the server serves.
 */
export function systemRoutes(ctx: ServerContext, allRoutes: () => AnyRoute[]): AnyRoute[] {
  const versions = { version: serverVersion(), langgraph_js_version: installedVersion("@langchain/langgraph") };
  let openApi: Record<string, unknown> | undefined;
  return [
    defineRoute({
      method: "get",
      path: "/ok",
      operationId: "health_check",
      tag: TAG,
      summary: "Health check; with check_db=1 also pings the storage",
      public: true,
      query: z.object({ check_db: QueryBoolean.optional() }),
      response: z.object({ ok: z.literal(true) }),
      errors: [500],
      handler: async ({ query, res }) => {
        if (query.check_db) {
          try {
            await ctx.storage.ping();
          } catch (error) {
            ctx.logger.error({ err: error }, "storage health check failed");
            res.status(500).json({ detail: "Storage is unavailable" });
            return;
          }
        }
        return { ok: true };
      },
    }),
    defineRoute({
      method: "get",
      path: "/info",
      operationId: "server_info",
      tag: TAG,
      summary: "Server version and enabled features",
      response: ServerInfo,
      handler: () => ({
        ...versions,
        context: "js",
        flags: featureFlags(allRoutes(), ctx.storage.store.index !== undefined, langSmithTracingEnabled()),
      }),
    }),
    defineRoute({
      method: "get",
      path: "/openapi.json",
      operationId: "openapi",
      tag: TAG,
      summary: "This OpenAPI document",
      public: true,
      handler: () => {
        openApi ??= buildOpenApi(
          {
            title: "agentplane Agent Server",
            version: versions.version,
            description: "LangGraph Agent Server API on Redis",
            securitySchemes: ctx.config.apiKeyHashes.length > 0 ? [API_KEY_SCHEME] : [],
          },
          allRoutes(),
          apiSchemas,
        );
        return openApi;
      },
    }),
  ];
}
