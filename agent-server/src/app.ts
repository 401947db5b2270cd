import {
  type AnyRoute,
  createJsonApp,
  docsRouter,
  errorHandler,
  mountRoutes,
  notFoundHandler,
} from "@agentplane/common";
import type { ErrorRequestHandler, Express, RequestHandler } from "express";
import type { ServerContext } from "./context.ts";
import { apiKeyAuth } from "./http/auth.ts";
import { configurableHeaders } from "./http/configurable-headers.ts";
import { cors, corsSettings } from "./http/cors.ts";
import { jsonBody, jsonQueryLimits } from "./http/json-limits.ts";
import type { Loopback } from "./http/loopback.ts";
import { builtinRouteEnabled, readHttpSection } from "./http/section.ts";
import { webhookGuard } from "./http/webhook-guard.ts";
import { storageUnavailableHandler } from "./storage/unavailable.ts";
import { systemRoutes } from "./system/routes.ts";

/**
 * One feature of the server: its routes, and what must happen when the server starts (after
 * storage and graphs are ready, before it listens) and stops (before storage closes).
 */
export interface ServerModule {
  name: string;
  routes?(ctx: ServerContext): AnyRoute[];
  /** Sees every request and every error first, before authentication (metrics). */
  observe?(ctx: ServerContext): { request?: RequestHandler; error?: ErrorRequestHandler };
  /**
   * Mounted after authentication, before body parsing and the API routes (the project's own
   * `http.app`, which may need the raw body).
   */
  middleware?(ctx: ServerContext): RequestHandler[];
  /** Whether its middleware authenticates every API request (custom auth): then no API keys is no open API. */
  authenticatesRequests?(): boolean;
  start?(ctx: ServerContext): Promise<void> | void;
  stop?(ctx: ServerContext): Promise<void> | void;
}

export interface AgentApp {
  app: Express;
  /** Every mounted route, the system routes included. */
  routes: AnyRoute[];
}

/**
 * Assembles the HTTP app: CORS (env and `langgraph.json` `http.cors`), observers, API-key auth
 * (which lets the server's own `loopback` requests through), the modules' middleware, JSON body
 * parsing within the depth and width limits, docs and routes (without those the `http.disable_*`
 * options remove), JSON 404/error handling (an unavailable Redis is a 503).
 */
export function createApp(ctx: ServerContext, modules: ServerModule[], loopback: Loopback): AgentApp {
  const http = readHttpSection(ctx.config.configPath);
  const routes: AnyRoute[] = [];
  routes.push(...systemRoutes(ctx, () => routes));
  for (const module of modules) routes.push(...(module.routes?.(ctx) ?? []));
  const enabled = routes.filter((route) => builtinRouteEnabled(http, route.path));
  routes.splice(0, routes.length, ...enabled);
  const app = createJsonApp({ parseJson: false });
  app.use(cors(corsSettings(ctx.config.corsOrigins, http)));
  const observers = modules.map((module) => module.observe?.(ctx) ?? {});
  for (const { request } of observers) if (request) app.use(request);
  const keys = ctx.config.apiKeyHashes;
  const usersAuthenticated = modules.some((module) => module.authenticatesRequests?.() ?? false);
  app.use(apiKeyAuth(keys.length > 0 ? [...keys, loopback.keyHash] : keys, ctx.logger, usersAuthenticated));
  for (const module of modules) for (const handler of module.middleware?.(ctx) ?? []) app.use(handler);
  app.use(jsonBody(ctx.config.bodyLimit), jsonQueryLimits(), configurableHeaders(http.configurable_headers));
  app.use(webhookGuard(ctx.config.webhookPolicy));
  app.use(docsRouter("agentplane Agent Server"));
  mountRoutes(app, routes);
  app.use(notFoundHandler);
  for (const { error } of observers) if (error) app.use(error);
  app.use(storageUnavailableHandler);
  app.use(errorHandler(ctx.logger));
  return { app, routes };
}
