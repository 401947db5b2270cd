import { ApiKeyVerifier, type Logger, unauthorized } from "@agentplane/common";
import type { Request, RequestHandler } from "express";

/**
 * Paths anyone may read: health checks, the API reference with the document it renders, and
 * generative UI files, which browsers load from `<script>`/`<link>` tags that carry no API key.
 */
const PUBLIC_PATHS = new Set(["/ok", "/docs", "/openapi.json"]);
const isPublic = (method: string, path: string) =>
  PUBLIC_PATHS.has(path) || path.startsWith("/docs/assets/") || (method === "GET" && path.startsWith("/ui/"));

/** A browser's CORS preflight, which never carries credentials; any other OPTIONS needs a key. */
const isPreflight = (req: Request) =>
  req.method === "OPTIONS" && req.get("origin") !== undefined && req.get("access-control-request-method") !== undefined;

/**
 * Requires an `X-Api-Key` matching one of `apiKeyHashes` (SHA-256 hex, compared in constant
 * time) on every non-public request. With no keys configured the API is open, and says so once,
 * unless `usersAuthenticated` (the project's custom auth authenticates every request).
 */
export function apiKeyAuth(apiKeyHashes: string[], logger: Logger, usersAuthenticated = false): RequestHandler {
  if (apiKeyHashes.length === 0) {
    if (usersAuthenticated) {
      logger.info(
        "no API keys configured: requests are authenticated by the project's auth (langgraph.json auth.path) only",
      );
    } else {
      logger.warn("no API keys configured (AGENTPLANE_API_KEYS / AGENTPLANE_API_KEYS_FILE): the API is open to anyone");
    }
    return (_req, _res, next) => next();
  }
  const verifier = new ApiKeyVerifier(apiKeyHashes.map((hash) => [hash, true] as [string, true]));
  return (req, res, next) => {
    // `cors` has answered the preflights of the origins it allows. One that gets here is from an
    // origin it does not: it ends here, without CORS headers, and reaches no handler (the
    // project's `http.app` routes registered with `.all()` would otherwise run without a key).
    if (isPreflight(req)) {
      res.status(204).end();
      return;
    }
    if (isPublic(req.method, req.path)) return next();
    const presented = req.get("x-api-key");
    next(verifier.verify(presented) ? undefined : unauthorized());
  };
}
