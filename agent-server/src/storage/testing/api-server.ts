import { createJsonApp, createLogger, errorHandler, listen, mountRoutes, notFoundHandler } from "@agentplane/common";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { testRedisUrl, uniquePrefix } from "../../../../testing/redis.ts";
import { assistantRoutes } from "../../assistants/routes.ts";
import { AssistantService } from "../../assistants/service.ts";
import { loadConfig } from "../../config.ts";
import type { ServerContext } from "../../context.ts";
import { deriveGraphSchemas, deriveSubgraphSchemas, type SchemaSources } from "../../graphs/schemas.ts";
import { fixtureConfig } from "../../graphs/testing/server.ts";
import type { AnyCompiledGraph, GraphRegistry } from "../../graphs/types.ts";
import { threadRoutes } from "../../threads/routes.ts";
import { ThreadService } from "../../threads/service.ts";
import { createMemoryStorage } from "../memory.ts";
import { createRedisStorage } from "../redis.ts";
import type { Storage } from "../types.ts";

const State = Annotation.Root({
  topic: Annotation<string>,
  reply: Annotation<string>,
});

/** One real graph, `agent`: `respond` echoes the topic. */
export function echoGraphRegistry(storage: Storage): GraphRegistry {
  const graph = new StateGraph(State)
    .addNode("respond", (state) => ({ reply: `about ${state.topic}` }))
    .addEdge(START, "respond")
    .addEdge("respond", END)
    .compile({ checkpointer: storage.checkpointer, store: storage.store }) as unknown as AnyCompiledGraph;
  const has = (graphId: string) => graphId === "agent";
  // Defined in this file, so its types are not read: its schemas are the channel list.
  const schemaSources: SchemaSources = {
    importPackage: (specifier) => import(specifier),
    staticSchemas: async () => undefined,
  };
  return {
    ids: () => ["agent"],
    has,
    description: () => "echoes the topic",
    get: async (graphId) => {
      if (!has(graphId)) throw new Error(`Graph "${graphId}" not found`);
      return graph;
    },
    schemas: (graphId, built) => deriveGraphSchemas(graphId, built ?? graph, schemaSources),
    schemasWithoutWaiting: (graphId) => deriveGraphSchemas(graphId, graph, schemaSources),
    subgraphSchemas: (graphId, built, namespace, recurse) =>
      deriveSubgraphSchemas(graphId, built, schemaSources, namespace, recurse),
    // This graph is imported normally, so it shares the server's module instances.
    importShared: (specifier) => import(specifier),
  };
}

export interface ApiServer {
  url: string;
  ctx: ServerContext;
  /** A raw JSON request, for what the SDK does not cover (bad input, headers). */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }>;
  close(): Promise<void>;
}

/** Both storage backends, for `describe.each`: the routes must behave the same on each. */
export function storageBackends(label: string): [string, () => Promise<Storage>][] {
  return [
    ["memory", async () => createMemoryStorage()],
    ["redis", () => createRedisStorage({ url: testRedisUrl(), prefix: uniquePrefix(label) })],
  ];
}

/** The assistant and thread routes over `storage`, on a free port. */
export async function startApiServer(storage: Storage): Promise<ApiServer> {
  const logger = createLogger("contract", "silent");
  const ctx: ServerContext = {
    config: loadConfig(["dev", "--config", fixtureConfig], {}),
    storage,
    graphs: echoGraphRegistry(storage),
    logger,
  };
  const app = createJsonApp();
  const threads = new ThreadService(ctx);
  mountRoutes(app, [...assistantRoutes(new AssistantService(ctx, () => threads)), ...threadRoutes(threads)]);
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  const server = await listen(app, 0);
  return {
    url: server.url,
    ctx,
    call: async (method, path, body) => {
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: { "content-type": "application/json" },
        body: typeof body === "string" ? body : body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: res.status === 204 ? undefined : await res.json(), headers: res.headers };
    },
    close: async () => {
      await server.close(100);
      await storage.close();
    },
  };
}
