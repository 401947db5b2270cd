import type { Request as ExpressRequest, RequestHandler } from "express";
import type { ServerModule } from "../app.ts";
import type { ServerContext } from "../context.ts";
import { GraphLoadError, importProjectExport, type ModuleLoader } from "../graphs/load.ts";
import {
  AuthRejection,
  type AuthUser,
  isProjectAuth,
  normalizeUser,
  type ProjectAuth,
  RequestAuth,
} from "./authorize.ts";
import { type AuthSettings, readAuthSettings } from "./config.ts";
import { authenticateRequest } from "./request.ts";

/** Paths nobody authenticates for: health checks and server info. */
const PUBLIC_PATHS = new Set(["/ok", "/info"]);
/** The API reference and the document it renders: public unless `auth.authenticate_docs`. */
const isDocs = (path: string) => path === "/docs" || path === "/openapi.json" || path.startsWith("/docs/assets/");
// Generative UI files are loaded by `<script>`/`<link>` tags, without credentials (as in the reference server).
const isPublic = (method: string, path: string, docsPublic: boolean) =>
  PUBLIC_PATHS.has(path) || (docsPublic && isDocs(path)) || (method === "GET" && path.startsWith("/ui/"));

/** Who a Studio request acts as, as on the reference server. */
const STUDIO_USER: AuthUser = {
  kind: "StudioUser",
  identity: "langgraph-studio-user",
  display_name: "langgraph-studio-user",
  is_authenticated: true,
  permissions: [],
};

const authOfRequest = new WeakMap<ExpressRequest, RequestAuth>();

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as PromiseLike<unknown> | null)?.then === "function";

/** The authenticated user of a request and the project's handlers; undefined without custom auth. */
export function requestAuth(req: ExpressRequest): RequestAuth | undefined {
  return authOfRequest.get(req);
}

/** Imports the project's `Auth` export: a missing module, export or non-`Auth` export stops the server. */
export async function loadProjectAuth(
  settings: AuthSettings,
): Promise<{ auth: ProjectAuth; loader: ModuleLoader } | undefined> {
  const { location } = settings;
  if (!location) return undefined;
  const { exported, loader } = await importProjectExport(
    `auth "${location.spec}"`,
    location.modulePath,
    location.exportName,
  );
  const auth = await exported;
  if (isProjectAuth(auth)) return { auth, loader };
  await loader.close();
  throw new GraphLoadError(
    auth === undefined
      ? `auth "${location.spec}": ${location.modulePath} has no export "${location.exportName}"`
      : `auth "${location.spec}": export "${location.exportName}" is not an Auth (create it with new Auth() from @langchain/langgraph-sdk/auth)`,
  );
}

/**
 * Runs the project's `authenticate` on every API request (after the API-key check, so with keys
 * configured a request needs both), except preflights and the public paths. Studio requests
 * (`x-auth-scheme: langsmith`) act as the Studio user instead, but only when API keys are
 * configured, so the key they passed is what proves them, and `disable_studio_auth` is not set.
 */
export function authenticateRequests(
  auth: ProjectAuth,
  settings: AuthSettings,
  apiKeysChecked: boolean,
): RequestHandler {
  const authenticate = auth["~handlerCache"].authenticate;
  const studio = settings.studioAuth && apiKeysChecked;
  const docsPublic = !settings.authenticateDocs;
  return (req, res, next) => {
    if (req.method === "OPTIONS" || isPublic(req.method, req.path, docsPublic)) return next();
    if (studio && req.get("x-auth-scheme") === "langsmith") {
      authOfRequest.set(req, new RequestAuth({ ...STUDIO_USER, permissions: [] }, auth));
      return next();
    }
    if (!authenticate) return next();
    const refuse = (error: unknown) => {
      const rejection = AuthRejection.from(error);
      for (const [name, value] of Object.entries(rejection.headers)) res.setHeader(name, value);
      next(rejection);
    };
    const admit = (result: unknown) => {
      let user: AuthUser;
      try {
        user = normalizeUser(result);
      } catch (error) {
        return refuse(error);
      }
      authOfRequest.set(req, new RequestAuth(user, auth));
      next();
    };
    let result: unknown;
    try {
      result = authenticate(authenticateRequest(req));
    } catch (error) {
      return refuse(error);
    }
    // An authenticate that answers at once (a token checked in memory) costs no promise and no tick.
    if (isThenable(result)) result.then(admit, refuse);
    else admit(result);
  };
}

/**
 * Custom authentication and authorization from `langgraph.json` `auth.path`. Its middleware
 * must come before every other module's (custom routes are authenticated too, as on the
 * reference): `defaultModules` lists it first among those with middleware.
 */
export function customAuthModule(): ServerModule {
  let loaded: { auth: ProjectAuth; loader: ModuleLoader } | undefined;
  let settings: AuthSettings | undefined;
  return {
    name: "custom-auth",
    async start(ctx: ServerContext) {
      settings = readAuthSettings(ctx.config.configPath);
      loaded = await loadProjectAuth(settings);
      if (loaded) ctx.logger.info({ auth: settings.location?.spec }, "custom authentication loaded");
    },
    middleware(ctx: ServerContext) {
      if (!loaded || !settings) return [];
      return [authenticateRequests(loaded.auth, settings, ctx.config.apiKeyHashes.length > 0)];
    },
    // An `Auth` with only `on(...)` handlers authenticates nobody: its handlers never run (as on the reference).
    authenticatesRequests: () => loaded?.auth["~handlerCache"].authenticate !== undefined,
    async stop() {
      await loaded?.loader.close();
      loaded = undefined;
    },
  };
}
