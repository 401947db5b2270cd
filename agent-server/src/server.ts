import { type AnyRoute, createLogger, type Logger, listen } from "@agentplane/common";
import express, { type Express, type Request, type Response } from "express";
import { a2aModule } from "./a2a/module.ts";
import { createApp, type ServerModule } from "./app.ts";
import { assistantsModule } from "./assistants/module.ts";
import type { ServerConfig } from "./config.ts";
import type { ServerContext } from "./context.ts";
import { type CronsModuleOptions, cronsModule } from "./crons/module.ts";
import { customAuthModule } from "./custom-auth/module.ts";
import { registerDefaultAssistants } from "./graphs/default-assistants.ts";
import { ProjectGraphRegistry } from "./graphs/registry.ts";
import { graphRoutes } from "./graphs/routes.ts";
import { customAppModule } from "./http/custom-app.ts";
import { Loopback } from "./http/loopback.ts";
import { storeApiModule } from "./long-term-store/module.ts";
import { loadStoreIndex, readStoreConfig } from "./long-term-store/project-config.ts";
import { mcpModule } from "./mcp/module.ts";
import { metricsModule } from "./metrics/module.ts";
import { ServerMetrics } from "./metrics/registry.ts";
import { installPooledRandomValues } from "./pooled-random.ts";
import { type RunsModule, runsModule } from "./runs/module.ts";
import { createMemoryStorage } from "./storage/memory.ts";
import { createRedisStorage } from "./storage/redis.ts";
import type { Storage } from "./storage/types.ts";
import { threadStreamModule } from "./thread-stream/routes.ts";
import { routeUpgrades } from "./thread-stream/upgrade.ts";
import { threadsModule } from "./threads/module.ts";
import { tracingModule } from "./tracing/module.ts";
import { uiModule } from "./ui/module.ts";

/**
 * The features every agent server has; later features append their module to this list.
 * `crons` adds to the crons module's options (the cron harness accepts seconds, crashes mid-firing).
 * `runs` replaces the runs module (tests: other timings, recorded callbacks); every other module
 * reaches runs through it. This is the one place services are handed to the modules using them.
 */
export function defaultModules(
  options: {
    crons?: Pick<CronsModuleOptions, "onStep" | "scheduleRules" | "settings" | "now">;
    runs?: RunsModule;
  } = {},
): ServerModule[] {
  const metrics = new ServerMetrics();
  const tracing = tracingModule();
  const runs =
    options.runs ??
    runsModule({
      callbacks: tracing.callbacks,
      onRunExecuted: (status, seconds) => metrics.recordRun(status, seconds),
    });
  // `assistants` is built below (it reaches threads, whose deletion reaches crons); read once started.
  const crons = cronsModule(
    { runs: runs.service, assistants: () => assistants.service() },
    {
      ...options.crons,
      onError: metrics.redisErrorCounter("crons"),
      onClaim: (won) => metrics.cronClaims.inc({ outcome: won ? "won" : "lost" }),
    },
  );
  const threads = threadsModule({
    onDelete: async (threadId) => {
      await runs.service().deleteThreadRuns(threadId);
      await crons.deleteThreadCrons(threadId);
    },
  });
  const assistants = assistantsModule(threads.service);
  return [
    // First, so it stops last: the traces of the runs that finish during shutdown are sent.
    tracing,
    metricsModule(runs.service, metrics),
    // Before every other module with middleware: custom routes are authenticated too.
    customAuthModule(),
    customAppModule(),
    assistants,
    {
      name: "graphs",
      routes: (ctx) => graphRoutes(assistants.service(), ctx.graphs),
      start: registerDefaultAssistants,
    },
    // Runs before threads, so they stop after it: the TTL sweeper deletes threads with their runs.
    runs,
    threads,
    crons,
    threadStreamModule({ runs: runs.service, events: runs.events, threads: threads.service, settings: runs.settings }),
    storeApiModule(),
    mcpModule(runs.service, assistants.service),
    a2aModule({ runs: runs.service, assistants: assistants.service, threads: threads.service }),
    uiModule(),
  ];
}

export interface StartOptions {
  modules?: ServerModule[];
  logger?: Logger;
}

export interface AgentServer {
  url: string;
  port: number;
  ctx: ServerContext;
  app: Express;
  /** Every mounted route (what `/openapi.json` documents). */
  routes: AnyRoute[];
  /** Reloads graph modules (dev mode); keeps the old graphs when the new code fails to load. */
  graphs: ProjectGraphRegistry;
  /** Stops accepting requests, waits for in-flight ones (up to the grace period), stops modules, closes storage. */
  close(): Promise<void>;
}

async function openStorage(config: ServerConfig, logger: Logger): Promise<Storage> {
  const { ttl, index } = readStoreConfig(config.configPath);
  const store = { ttl, ...(index && { index: await loadStoreIndex(config.configPath, index) }) };
  if (config.storage.kind === "redis") {
    const { url, prefix } = config.storage;
    return createRedisStorage({ url, prefix, logger, store });
  }
  return createMemoryStorage(store);
}

/**
 * What the server answers while storage connects: liveness (`/ok`) succeeds, so a kubelet does not
 * kill a server waiting for a Redis that comes up late; readiness (`/ok?check_db=1`) and every other
 * request get 503, so no traffic is routed to it yet.
 */
function startingApp(): Express {
  const app = express();
  app.get("/ok", (req: Request, res: Response) => {
    if (req.query.check_db === undefined) res.json({ ok: true });
    else res.status(503).json({ detail: "Storage is not connected yet" });
  });
  app.use((_req: Request, res: Response) => {
    res.status(503).set("Retry-After", "1").json({ detail: "Server is starting" });
  });
  return app;
}

/**
 * Listens first (see startingApp), then builds storage, graphs and the HTTP app, runs module start
 * hooks and hands the listening server to the app.
 */
export async function startAgentServer(config: ServerConfig, options: StartOptions = {}): Promise<AgentServer> {
  const logger = options.logger ?? createLogger("agent-server", config.logLevel);
  if (config.pooledRandomValues) installPooledRandomValues();
  const modules = options.modules ?? defaultModules();
  const starting = startingApp();
  const running = await listen(starting, config.port, config.host);
  let storage: Storage | undefined;
  const started: ServerModule[] = [];
  let ctx: ServerContext | undefined;
  const stopModules = async () => {
    for (const module of started.reverse()) {
      if (ctx) await module.stop?.(ctx);
    }
  };
  try {
    storage = await openStorage(config, logger);
    const graphs = await ProjectGraphRegistry.load(config.configPath, storage, logger);
    ctx = { config, storage, graphs, logger };
    for (const module of modules) {
      await module.start?.(ctx);
      started.push(module);
    }
    const loopback = new Loopback();
    const { app, routes } = createApp(ctx, modules, loopback);
    // Swapping the request listener, rather than delegating from the starting app, costs requests nothing.
    running.server.off("request", starting);
    running.server.on("request", app);
    // WebSocket upgrades go through the app too, so they are authenticated as requests are.
    const upgrades = routeUpgrades(running.server, app);
    // `new Client()` without apiUrl in graphs and custom routes, and relative webhooks, reach this server.
    loopback.bind(running.url);
    const context = ctx;
    const opened = storage;
    return {
      url: running.url,
      port: running.port,
      ctx: context,
      app,
      routes,
      graphs,
      close: async () => {
        // Sockets first: the HTTP server's close waits for every connection, upgraded ones too.
        upgrades.close();
        await running.close(config.shutdownGraceMs);
        await stopModules();
        loopback.release();
        await opened.close();
      },
    };
  } catch (error) {
    await running.close(0);
    await stopModules();
    await storage?.close();
    throw error;
  }
}
