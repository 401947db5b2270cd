import { randomBytes, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import { dirname } from "node:path";
import express, {
  type Request as ExpressRequest,
  type Response as ExpressResponse,
  type RequestHandler,
} from "express";
import type { ServerModule } from "../app.ts";
import type { ServerContext } from "../context.ts";
import { GraphLoadError, importProjectExport, type ModuleLoader } from "../graphs/load.ts";
import { parseGraphSpec } from "../graphs/project.ts";
import { jsonBody } from "./json-limits.ts";
import { readHttpSection } from "./section.ts";

/** Anything answering WHATWG requests: Hono, and other fetch-style frameworks. */
interface FetchApp {
  fetch(request: Request): Response | Promise<Response>;
}

/** The part of Hono's app interface used here, checked by shape: the project has its own copy of hono. */
interface HonoApp extends FetchApp {
  notFound(handler: (c: { req: { raw: Request } }) => Response | Promise<Response>): unknown;
  routes: unknown[];
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;
const isExpressHandler = (value: unknown): value is RequestHandler => typeof value === "function";
const isFetchApp = (value: unknown): value is FetchApp => isObject(value) && typeof value.fetch === "function";
const isHonoApp = (value: unknown): value is HonoApp =>
  isFetchApp(value) &&
  typeof (value as Partial<HonoApp>).notFound === "function" &&
  Array.isArray((value as Partial<HonoApp>).routes);

/** Hop-by-hop headers, and the length: the body is re-encoded (chunked) on the way out. */
const UNFORWARDED = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer",
  "proxy-connection",
  "content-length",
]);

/** The request's headers, `host` included (the app may read it), without hop-by-hop ones. */
function requestHeaders(req: ExpressRequest): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(":") || UNFORWARDED.has(name)) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  return headers;
}

/** The request's body exactly as sent (signatures over it still verify); GET and HEAD have none. */
function requestBody(req: ExpressRequest): Uint8Array | undefined {
  if (req.method === "GET" || req.method === "HEAD" || !Buffer.isBuffer(req.body)) return undefined;
  return req.body;
}

function toWebRequest(req: ExpressRequest, body: Uint8Array | undefined, signal: AbortSignal): Request {
  let url: URL;
  try {
    url = new URL(req.originalUrl, `http://${req.headers.host ?? "localhost"}`);
  } catch {
    url = new URL(req.originalUrl, "http://localhost");
  }
  return new Request(url, { method: req.method, headers: requestHeaders(req), body, signal });
}

/** Streams a WHATWG response out through express, chunk by chunk (server-sent events included). */
async function sendWebResponse(res: ExpressResponse, response: Response): Promise<void> {
  res.status(response.status);
  for (const [name, value] of response.headers) {
    if (name !== "set-cookie" && !UNFORWARDED.has(name)) res.setHeader(name, value);
  }
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) res.setHeader("set-cookie", cookies);
  if (!response.body) {
    res.end();
    return;
  }
  res.flushHeaders();
  for await (const chunk of response.body) {
    if (res.destroyed) break;
    if (!res.write(chunk)) await Promise.race([once(res, "drain"), once(res, "close")]);
  }
  res.end();
}

/** This server's own address, as the request reached it. */
function ownOrigin(req: ExpressRequest): string {
  const { localAddress, localPort } = req.socket;
  const host = localAddress?.includes(":") ? `[${localAddress}]` : (localAddress ?? "127.0.0.1");
  return `http://${host}:${localPort}`;
}

const FORWARD_HEADER = "x-agentplane-custom-app-pass";

/**
 * The API's answer to a request the app did not handle, with the request's current headers (the
 * app's middleware may have changed them) and its original body. Its headers are copied into a
 * mutable set so the app's middleware can still set some after `next()`.
 */
async function forward(origin: string, request: Request, body: Uint8Array | undefined, token: string) {
  const url = new URL(request.url);
  const headers = new Headers(request.headers);
  // The connection goes to this server's own address, whatever host the client asked for.
  headers.delete("host");
  headers.set(FORWARD_HEADER, token);
  const answer = await fetch(new URL(`${url.pathname}${url.search}`, origin), {
    method: request.method,
    headers,
    body,
    signal: request.signal,
    redirect: "manual",
  });
  return new Response(answer.body, {
    status: answer.status,
    statusText: answer.statusText,
    headers: new Headers(answer.headers),
  });
}

/**
 * Serves a fetch-style app as express middleware. A Hono app's unmatched requests (its notFound
 * handler, which the reference server never reaches either, as it merges the app's routes into
 * its own) go on to the API through this server's own listener, marked with a token so the
 * second pass skips the app; the API's response then comes back through the app's middleware,
 * which can read and change it, as on the reference server. Other fetch-style apps have no
 * "next": a 404 from them means unmatched, and the API answers instead. Bodies are read raw
 * (before the API's JSON parsing) and passed on unchanged.
 */
function fetchAppHandler(app: FetchApp, bodyLimit: string): RequestHandler {
  const token = randomBytes(32).toString("hex");
  const isForwarded = (req: ExpressRequest) => {
    const presented = Buffer.from(req.get(FORWARD_HEADER) ?? "");
    return presented.length === token.length && timingSafeEqual(presented, Buffer.from(token));
  };
  /** What forwarding needs that the WHATWG request does not carry, by request. */
  const pending = new WeakMap<Request, { origin: string; body: Uint8Array | undefined }>();
  const hono = isHonoApp(app);
  if (hono) {
    app.notFound((c) => {
      const entry = pending.get(c.req.raw);
      if (!entry) throw new Error("the custom app replaced the request object; cannot pass it on to the API");
      return forward(entry.origin, c.req.raw, entry.body, token);
    });
  }
  const readRaw = express.raw({ type: () => true, limit: bodyLimit });
  return (req, res, next) => {
    if (isForwarded(req)) return next();
    readRaw(req, res, async (error?: unknown) => {
      if (error) return next(error);
      const aborted = new AbortController();
      res.once("close", () => aborted.abort());
      const body = requestBody(req);
      const request = toWebRequest(req, body, aborted.signal);
      const origin = ownOrigin(req);
      pending.set(request, { origin, body });
      try {
        let response = await app.fetch(request);
        if (!hono && response.status === 404) {
          await response.body?.cancel();
          response = await forward(origin, request, body, token);
        }
        await sendWebResponse(res, response);
      } catch (failure) {
        if (aborted.signal.aborted) return;
        if (res.headersSent) res.destroy(failure as Error);
        else next(failure);
      }
    });
  };
}

/** An `http.app` export as express middleware: express apps and routers as they are, fetch-style apps adapted. */
function asMiddleware(exported: unknown, bodyLimit: string): RequestHandler[] | undefined {
  if (isFetchApp(exported)) return [fetchAppHandler(exported, bodyLimit)];
  // Express apps see parsed JSON bodies, as the API's routes do.
  if (isExpressHandler(exported)) return [jsonBody(bodyLimit), exported];
  return undefined;
}

/**
 * The project's own app (`http.app: "./src/app.ts:app"`): a Hono app as LangGraph.js documents
 * it, any app with a WHATWG `fetch(request)` handler, or an express app or router. Mounted after
 * authentication and before the API routes, so it can add routes, shadow built-in ones, and wrap
 * their responses in middleware.
 */
export function customAppModule(): ServerModule {
  let loaded: { handlers: RequestHandler[]; loader: ModuleLoader } | undefined;
  return {
    name: "custom-app",
    async start(ctx: ServerContext) {
      const spec = readHttpSection(ctx.config.configPath).app;
      if (!spec) return;
      const { modulePath, exportName } = parseGraphSpec("http.app", spec, dirname(ctx.config.configPath));
      const { exported, loader } = await importProjectExport("http.app", modulePath, exportName);
      const handlers = asMiddleware(await exported, ctx.config.bodyLimit);
      if (!handlers) {
        await loader.close();
        throw new GraphLoadError(
          `http.app: ${modulePath} export "${exportName}" is neither an app with a fetch(request) handler (Hono) nor an express app or router`,
        );
      }
      loaded = { handlers, loader };
    },
    middleware: () => loaded?.handlers ?? [],
    async stop() {
      await loaded?.loader.close();
      loaded = undefined;
    },
  };
}
