import type { RequestHandler } from "express";
import { z } from "zod";
import { readProjectSection } from "../graphs/project.ts";

/** Response headers browser clients must be able to read (run location, pagination). */
const EXPOSED_HEADERS = ["content-location", "location", "x-pagination-total", "x-pagination-next"];

const CorsSection = z.object({
  allow_origins: z.array(z.string().min(1)).optional(),
  allow_methods: z.array(z.string().min(1)).optional(),
  allow_headers: z.array(z.string().min(1)).optional(),
  allow_credentials: z.boolean().optional(),
  expose_headers: z.array(z.string().min(1)).optional(),
  max_age: z.number().int().min(0).optional(),
});

/** The `http` section of `langgraph.json` (the parts the server reads). */
const HttpSection = z.object({
  app: z.string().min(1).optional(),
  cors: CorsSection.optional(),
  disable_mcp: z.boolean().optional(),
  disable_a2a: z.boolean().optional(),
});
export type HttpSection = z.infer<typeof HttpSection>;

/** Reads and validates `http` from `langgraph.json`; a bad section is a ProjectError (exit code 2). */
export function readHttpSection(configPath: string): HttpSection {
  return readProjectSection(configPath, "http", HttpSection);
}

export interface CorsSettings {
  /** `*` allows any origin. */
  allowOrigins: string[];
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
    allowOrigins: cors.allow_origins ?? envOrigins,
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
  return (req, res, next) => {
    const origin = req.get("origin");
    if (origin && (anyOrigin || allowed.has(origin))) {
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
