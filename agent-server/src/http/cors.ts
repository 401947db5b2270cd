import type { RequestHandler } from "express";
import type { HttpSection } from "./section.ts";

/** Response headers browser clients must be able to read (run location, pagination). */
const EXPOSED_HEADERS = ["content-location", "location", "x-pagination-total", "x-pagination-next"];

export interface CorsSettings {
  /** `*` allows any origin. */
  allowOrigins: string[];
  /** Origins matching it are allowed too (`http.cors.allow_origin_regex`). */
  allowOriginRegex?: RegExp;
  allowMethods: string[];
  /** Absent: whatever the preflight asks for. */
  allowHeaders?: string[];
  allowCredentials: boolean;
  exposeHeaders: string[];
  maxAgeSeconds: number;
}

/** `http.cors` from langgraph.json wins over CORS_ALLOW_ORIGINS (pure). */
export function corsSettings(envOrigins: string[], section: HttpSection): CorsSettings {
  const cors = section.cors ?? {};
  return {
    // As in the reference server, a regex alone allows only the origins it matches.
    allowOrigins: cors.allow_origins ?? (cors.allow_origin_regex ? [] : envOrigins),
    ...(cors.allow_origin_regex && { allowOriginRegex: new RegExp(cors.allow_origin_regex) }),
    allowMethods: cors.allow_methods ?? ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
    allowHeaders: cors.allow_headers,
    allowCredentials: cors.allow_credentials ?? false,
    exposeHeaders: [...new Set([...EXPOSED_HEADERS, ...(cors.expose_headers ?? [])])],
    maxAgeSeconds: cors.max_age ?? 600,
  };
}

/**
 * CORS for browser clients (Studio, web apps). With credentials the origin is echoed instead
 * of `*`, as browsers require.
 */
export function cors(settings: CorsSettings): RequestHandler {
  const anyOrigin = settings.allowOrigins.includes("*");
  const allowed = new Set(settings.allowOrigins);
  const echoOrigin = !anyOrigin || settings.allowCredentials;
  const regex = settings.allowOriginRegex;
  return (req, res, next) => {
    const origin = req.get("origin");
    if (origin && (anyOrigin || allowed.has(origin) || regex?.test(origin))) {
      res.set("Access-Control-Allow-Origin", echoOrigin ? origin : "*");
      if (echoOrigin) res.vary("Origin");
      if (settings.allowCredentials) res.set("Access-Control-Allow-Credentials", "true");
      res.set("Access-Control-Expose-Headers", settings.exposeHeaders.join(", "));
      if (req.method === "OPTIONS") {
        res.set("Access-Control-Allow-Methods", settings.allowMethods.join(", "));
        res.set(
          "Access-Control-Allow-Headers",
          settings.allowHeaders?.join(", ") ?? req.get("access-control-request-headers") ?? "*",
        );
        res.set("Access-Control-Max-Age", String(settings.maxAgeSeconds));
        res.status(204).end();
        return;
      }
    }
    next();
  };
}
