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
import { cors, corsSettings, readHttpSection } from "./http/cors.ts";
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
  /** Mounted after authentication, before the API routes (the project's own `http.app`). */
  middleware?(ctx: ServerContext): RequestHandler[];
  start?(ctx: ServerContext): Promise<void> | void;
  stop?(ctx: ServerContext): Promise<void> | void;
}

export interface AgentApp {
  app: Express;
  /** Every mounted route, the system routes included. */
  routes: AnyRoute[];
}

/**
 * Assembles the HTTP app: CORS (env and `langgraph.json` `http.cors`), observers, API-key auth,
 * docs, the modules' middleware and routes, JSON 404/error handling.
 */
export function createApp(ctx: ServerContext, modules: ServerModule[]): AgentApp {
  const routes: AnyRoute[] = [];
  routes.push(...systemRoutes(ctx, () => routes));
  for (const module of modules) routes.push(...(module.routes?.(ctx) ?? []));
  const app = createJsonApp({ bodyLimit: ctx.config.bodyLimit });
  app.use(cors(corsSettings(ctx.config.corsOrigins, readHttpSection(ctx.config.configPath))));
  const observers = modules.map((module) => module.observe?.(ctx) ?? {});
  for (const { request } of observers) if (request) app.use(request);
  app.use(apiKeyAuth(ctx.config.apiKeyHashes, ctx.logger));
  app.use(docsRouter("agentplane Agent Server"));
  for (const module of modules) for (const handler of module.middleware?.(ctx) ?? []) app.use(handler);
  mountRoutes(app, routes);
  app.use(notFoundHandler);
  for (const { error } of observers) if (error) app.use(error);
  app.use(errorHandler(ctx.logger));
  return { app, routes };
}
