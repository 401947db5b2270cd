import { z } from "zod";
import { readProjectSection } from "../graphs/project.ts";
import { ConfigurableHeadersSection } from "./configurable-headers.ts";

const CorsSection = z.strictObject({
  allow_origins: z.array(z.string().min(1)).optional(),
  allow_origin_regex: z
    .string()
    .min(1)
    .refine((pattern) => {
      try {
        new RegExp(pattern);
        return true;
      } catch {
        return false;
      }
    }, "is not a valid regular expression")
    .optional(),
  allow_methods: z.array(z.string().min(1)).optional(),
  allow_headers: z.array(z.string().min(1)).optional(),
  allow_credentials: z.boolean().optional(),
  expose_headers: z.array(z.string().min(1)).optional(),
  max_age: z.number().int().min(0).optional(),
});

const KNOWN_KEYS = new Set([
  "app",
  "cors",
  "configurable_headers",
  "disable_assistants",
  "disable_threads",
  "disable_runs",
  "disable_store",
  "disable_meta",
  "disable_mcp",
  "disable_a2a",
]);

/** Options of other LangGraph servers this one does not implement, and what to do instead. */
const UNSUPPORTED_HINTS: Record<string, string> = {
  mount_prefix: "serve the API under a path prefix with your ingress or reverse proxy",
  enable_custom_route_auth: "custom routes always sit behind the API-key check",
  disable_ui: "generative UI is configured by the ui section",
  disable_webhooks: "leave webhook out of run requests",
  logging_headers: "request headers are not logged",
  middleware_order: "custom middleware always runs after authentication and before the API",
};

/**
 * The `http` section of `langgraph.json`. Keys this server does not implement are refused, so
 * an option never silently has no effect.
 */
const HttpSection = z
  .object({
    app: z.string().min(1).optional(),
    cors: CorsSection.optional(),
    configurable_headers: ConfigurableHeadersSection.optional(),
    disable_assistants: z.boolean().optional(),
    disable_threads: z.boolean().optional(),
    disable_runs: z.boolean().optional(),
    disable_store: z.boolean().optional(),
    disable_meta: z.boolean().optional(),
    disable_mcp: z.boolean().optional(),
    disable_a2a: z.boolean().optional(),
  })
  .catchall(z.unknown())
  .superRefine((section, ctx) => {
    for (const key of Object.keys(section)) {
      if (KNOWN_KEYS.has(key)) continue;
      const hint = UNSUPPORTED_HINTS[key];
      ctx.addIssue({
        code: "custom",
        path: [key],
        message: `is not supported by this server${hint ? ` (${hint})` : ""}`,
      });
    }
  });
export type HttpSection = z.infer<typeof HttpSection>;

/** Reads and validates `http` from `langgraph.json`; a bad section is a ProjectError (exit code 2). */
export function readHttpSection(configPath: string): HttpSection {
  return readProjectSection(configPath, "http", HttpSection);
}

const isRunPath = (path: string) => path.startsWith("/runs") || /^\/threads\/:thread_id\/runs(\/|$)/.test(path);

/**
 * Whether a built-in route stays mounted under the `disable_*` options, grouped as the reference
 * server groups them: runs include crons and a thread's runs; threads are the rest of
 * `/threads`. `disable_meta` removes `/info` but keeps `/ok`, the health check that probes and
 * load balancers use.
 */
export function builtinRouteEnabled(section: HttpSection, path: string): boolean {
  if (section.disable_assistants && path.startsWith("/assistants")) return false;
  if (section.disable_runs && isRunPath(path)) return false;
  if (section.disable_threads && path.startsWith("/threads") && !isRunPath(path)) return false;
  if (section.disable_store && path.startsWith("/store")) return false;
  if (section.disable_meta && path === "/info") return false;
  return true;
}
