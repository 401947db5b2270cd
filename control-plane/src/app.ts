import {
  type AnyRoute,
  ApiKeyVerifier,
  buildOpenApi,
  createJsonApp,
  createLogger,
  defineRoute,
  docsRouter,
  errorHandler,
  HttpError,
  type Logger,
  listen,
  mountRoutes,
  notFoundHandler,
} from "@agentplane/common";
import { ApiException } from "@kubernetes/client-node";
import express, { type ErrorRequestHandler, type Express } from "express";
import { z } from "zod";
import { createJwtVerifier } from "./auth/jwt.ts";
import { authenticate } from "./auth/middleware.ts";
import { grantHashesFor, type Principal } from "./auth/principal.ts";
import type { ControlPlaneConfig } from "./config.ts";
import { createDeploymentCaches } from "./deployments/caches.ts";
import { NamespacePlacement } from "./deployments/namespaces.ts";
import { deploymentRoutes } from "./deployments/routes.ts";
import { DeploymentService } from "./deployments/service.ts";
import { DeploymentStore } from "./deployments/store.ts";
import { createKubeClients, loadKubeConfig } from "./kube/client.ts";
import { ConflictRetriesExhausted, kubeReason } from "./kube/errors.ts";
import { listenerRoutes } from "./listeners/routes.ts";
import { ListenerService } from "./listeners/service.ts";
import { ListenerStore } from "./listeners/store.ts";
import { logRoutes } from "./logs/routes.ts";
import { LogService } from "./logs/service.ts";
import { providerRoutes } from "./providers/routes.ts";
import { ProviderStore } from "./providers/store.ts";
import { revisionRoutes } from "./revisions/routes.ts";
import { RevisionStore } from "./revisions/store.ts";
import { apiSchemas } from "./schemas/registry.ts";

export const API_TITLE = "agentplane Control Plane API";
export const API_VERSION = "0.1.0";

const securitySchemes = [
  { name: "API Key", scheme: { type: "apiKey", in: "header", name: "X-Api-Key" } },
  { name: "Tenant ID", scheme: { type: "apiKey", in: "header", name: "X-Tenant-Id" } },
  { name: "Bearer Auth", scheme: { type: "http", scheme: "bearer", bearerFormat: "JWT" } },
];

const okRoute = defineRoute({
  method: "get",
  path: "/ok",
  operationId: "ok_ok_get",
  tag: "Health",
  summary: "Health check",
  response: z.object({ ok: z.boolean() }),
  public: true,
  handler: () => ({ ok: true }),
});

/**
 * Kubernetes failures that reach a request: a conflict that outlasted every retry is a 409 the
 * client may retry; an object the API server refuses is a 422; an unreachable API server a 503;
 * anything else is ours (500).
 */
function kubeErrorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, _res, next) => {
    if (error instanceof ConflictRetriesExhausted) {
      next(new HttpError(409, "The resource was modified concurrently; please retry."));
      return;
    }
    if (error instanceof ApiException && (error.code === 409 || error.code === 422)) {
      logger.warn({ status: error.code, reason: kubeReason(error), path: req.path }, "Kubernetes API refused a write");
      next(
        error.code === 409
          ? new HttpError(409, "The resource was modified concurrently; please retry.")
          : new HttpError(422, [{ loc: ["body"], msg: "Rejected by the Kubernetes API", type: "value_error" }]),
      );
      return;
    }
    if (error instanceof ApiException && error.code === 403) {
      // Kubernetes forbade the control plane itself (its RBAC, or an admission plugin such as
      // OwnerReferencesPermissionEnforcement): not the client's mistake, and not one a retry fixes
      // until an administrator grants the permission, which the message names.
      const message = kubeMessage(error);
      logger.error({ message, path: req.path }, "Kubernetes API forbade a request of the control plane");
      next(
        new HttpError(
          503,
          `The control plane lacks a Kubernetes permission for this request; an administrator must grant it. Kubernetes said: ${message}`,
        ),
      );
      return;
    }
    if (error instanceof TypeError && error.message === "fetch failed") {
      logger.error({ err: error.cause, path: req.path }, "Kubernetes API unreachable");
      next(new HttpError(503, "The Kubernetes API is unreachable; please retry."));
      return;
    }
    next(error);
  };
}

/** The `message` of a Kubernetes `Status` failure body. */
function kubeMessage(error: ApiException<unknown>): string {
  const body: unknown = typeof error.body === "string" ? safeJson(error.body) : error.body;
  const message = body && typeof body === "object" ? (body as { message?: unknown }).message : undefined;
  return typeof message === "string" ? message : `HTTP ${error.code}`;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export interface ControlPlane {
  app: Express;
  /** Starts the watches behind the read caches (reads go to the API server until they are in). */
  start(): void;
  stop(): Promise<void>;
}

export function createControlPlane(config: ControlPlaneConfig, logger: Logger): ControlPlane {
  const kubeConfig = loadKubeConfig(config.kubeconfigPath);
  const kube = createKubeClients(kubeConfig);
  const placement = new NamespacePlacement(config.layout);
  const caches = createDeploymentCaches(kubeConfig, kube, placement.watchScope, logger);
  const listeners = new ListenerService(new ListenerStore(kube, config.providersNamespace), placement);
  const service = new DeploymentService(
    new DeploymentStore(kube, placement, caches),
    new RevisionStore(kube),
    listeners,
    {
      apiKeyHashes: (tenantId) => grantHashesFor(config.apiKeys, tenantId),
      logger,
    },
  );
  const providers = new ProviderStore(kube, config.providersNamespace);
  const routes: AnyRoute[] = [
    ...deploymentRoutes(service),
    ...revisionRoutes(service),
    ...logRoutes(new LogService(kube, service, logger)),
    ...listenerRoutes(listeners),
    ...providerRoutes(providers),
  ];
  const apiKeys = new ApiKeyVerifier<Principal>(
    config.apiKeys.map((grant) => [
      grant.hash,
      { organizationId: grant.organization_id, workspaceIds: grant.workspace_ids },
    ]),
  );
  const openApi = buildOpenApi(
    { title: API_TITLE, version: API_VERSION, securitySchemes },
    [okRoute, ...routes],
    apiSchemas,
  );

  const api = express.Router();
  mountRoutes(api, [okRoute]);
  api.get("/openapi.json", (_req, res) => {
    res.json(openApi);
  });
  api.use(docsRouter(API_TITLE));
  api.use(authenticate({ apiKeys, jwt: config.jwt ? createJwtVerifier(config.jwt) : undefined }));
  mountRoutes(api, routes);

  const app = createJsonApp({ bodyLimit: "1mb" });
  // Method, path, status and duration only: headers and bodies carry credentials and secrets.
  app.use((req, res, next) => {
    const started = performance.now();
    res.on("finish", () => {
      const ms = Math.round((performance.now() - started) * 10) / 10;
      logger.info({ method: req.method, path: req.path, status: res.statusCode, ms }, "request");
    });
    next();
  });
  // Self-hosted LangSmith serves this API under /api-host; clients configured that way keep working.
  app.use("/api-host", api);
  app.use(api);
  app.use(notFoundHandler);
  app.use(kubeErrorHandler(logger));
  app.use(errorHandler(logger));
  return {
    app,
    start: () => {
      caches.deployments.start();
      caches.secrets.start();
    },
    stop: async () => {
      await Promise.all([caches.deployments.stop(), caches.secrets.stop()]);
    },
  };
}

export interface RunningControlPlane {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Starts the control plane in-process (tests, the quick-start e2e, `main.ts`). */
export async function startControlPlane(config: ControlPlaneConfig): Promise<RunningControlPlane> {
  const logger = createLogger("control-plane", config.logLevel);
  const controlPlane = createControlPlane(config, logger);
  controlPlane.start();
  const server = await listen(controlPlane.app, config.port, config.host);
  logger.info({ url: server.url, layout: config.layout }, "control plane listening");
  return {
    url: server.url,
    port: server.port,
    close: async () => {
      await server.close(5_000);
      await controlPlane.stop();
    },
  };
}
