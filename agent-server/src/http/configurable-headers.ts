import type { IncomingHttpHeaders } from "node:http";
import type { Request, RequestHandler } from "express";
import { z } from "zod";

const Patterns = z.array(z.string().min(1).max(256)).max(100);

/**
 * `http.configurable_headers` of `langgraph.json`: which request headers a run gets in
 * `config.configurable`. The reference server names the lists `includes` and `excludes` (its
 * docs also show `include` and `exclude`, which it accepts too); each entry is a header name or a
 * pattern where `*` matches any characters, compared case-insensitively.
 */
export const ConfigurableHeadersSection = z
  .strictObject({
    includes: Patterns.optional(),
    include: Patterns.optional(),
    excludes: Patterns.optional(),
    exclude: Patterns.optional(),
  })
  .transform(({ includes = [], include = [], excludes = [], exclude = [] }) => ({
    includes: [...includes, ...include],
    excludes: [...excludes, ...exclude],
  }));
export type ConfigurableHeadersSection = z.output<typeof ConfigurableHeadersSection>;

/**
 * Credentials never reach a run, whatever the patterns say: the run record is readable by anyone
 * who can read the thread (`GET …/runs/{id}`), and graphs may log their config.
 */
const NEVER_FORWARDED = new Set([
  "authorization",
  "cookie",
  "proxy-authorization",
  "x-api-key",
  "x-service-key",
  "x-tenant-id",
]);

const escapeRegExp = (text: string) => text.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
const matcher = (patterns: string[]) => {
  if (patterns.length === 0) return () => false;
  const source = patterns.map((pattern) => escapeRegExp(pattern.toLowerCase()).replaceAll("*", ".*")).join("|");
  const regex = new RegExp(`^(?:${source})$`);
  return (name: string) => regex.test(name);
};

/**
 * The headers of a request that a run created by it forwards into `configurable` (pure): those
 * an `includes` pattern matches and no `excludes` pattern does, credentials never. Without the
 * section nothing is forwarded (the reference forwards every `x-*` header, which put API keys of
 * model providers sent as `x-openai-api-key` into stored, readable run records).
 */
export function headerForwarder(section: ConfigurableHeadersSection | undefined) {
  const included = matcher(section?.includes ?? []);
  const excluded = matcher(section?.excludes ?? []);
  return (headers: IncomingHttpHeaders): Record<string, string> => {
    const forwarded: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (typeof value !== "string" || NEVER_FORWARDED.has(name)) continue;
      if (included(name) && !excluded(name)) forwarded[name] = value;
    }
    return forwarded;
  };
}

const forwardedOfRequest = new WeakMap<Request, Record<string, string>>();

/** Records, for each request, the headers that `http.configurable_headers` lets runs see. */
export function configurableHeaders(section: ConfigurableHeadersSection | undefined): RequestHandler {
  const forward = headerForwarder(section);
  return (req, _res, next) => {
    forwardedOfRequest.set(req, forward(req.headers));
    next();
  };
}

/** The headers of `req` a run it creates puts into `configurable` (none outside the app). */
export function forwardedHeaders(req: Request): Record<string, string> {
  return forwardedOfRequest.get(req) ?? {};
}
