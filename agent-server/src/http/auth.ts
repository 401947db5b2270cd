import { ApiKeyVerifier, type Logger, unauthorized } from "@agentplane/common";
import type { RequestHandler } from "express";

/** Paths anyone may read: health checks, and the API reference with the document it renders. */
const PUBLIC_PATHS = new Set(["/ok", "/docs", "/openapi.json"]);
const isPublic = (path: string) => PUBLIC_PATHS.has(path) || path.startsWith("/docs/assets/");

/**
 * Requires an `X-Api-Key` matching one of `apiKeyHashes` (SHA-256 hex, compared in constant
 * time) on every non-public request. With no keys configured the API is open, and says so once.
 */
export function apiKeyAuth(apiKeyHashes: string[], logger: Logger): RequestHandler {
  if (apiKeyHashes.length === 0) {
    logger.warn("no API keys configured (AGENTPLANE_API_KEYS / AGENTPLANE_API_KEYS_FILE): the API is open to anyone");
    return (_req, _res, next) => next();
  }
  const verifier = new ApiKeyVerifier(apiKeyHashes.map((hash) => [hash, true] as [string, true]));
  return (req, _res, next) => {
    if (req.method === "OPTIONS" || isPublic(req.path)) return next();
    const presented = req.get("x-api-key");
    next(verifier.verify(presented) ? undefined : unauthorized());
  };
}
