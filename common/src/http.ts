import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from "express";
import { HttpError } from "./errors.ts";
import type { Logger } from "./logger.ts";

/** The content types request bodies are parsed from. */
export const JSON_TYPES = ["application/json", "application/*+json"];

export interface JsonAppOptions {
  /** Largest accepted JSON body, in express `bytes` syntax. */
  bodyLimit?: string;
  /** `false`: the caller mounts `jsonBodyParser` itself, later, to let some handlers read raw bodies first. */
  parseJson?: boolean;
}

/** Parses JSON bodies (also when browsers send them as text/plain) up to `bodyLimit`. */
export const jsonBodyParser = (bodyLimit = "10mb"): RequestHandler =>
  express.json({ limit: bodyLimit, type: JSON_TYPES });

/**
 * An express app that parses JSON bodies sent as JSON, and trusts nothing else about the request.
 * Not `text/plain`: a web page can send that cross-site without a CORS preflight, so accepting it
 * would let any page a user visits call the API (routes answer it with 415, see `mountRoutes`).
 */
export function createJsonApp({ bodyLimit = "10mb", parseJson = true }: JsonAppOptions = {}): Express {
  const app = express();
  app.disable("x-powered-by");
  // No ETag: express hashes every JSON body for one (SHA-1 of ~3 MB for a history page of a long
  // conversation, a sixth of its answer's time), no client of these APIs sends If-None-Match,
  // and the reference servers send none.
  app.set("etag", false);
  app.set("query parser", "extended");
  if (parseJson) app.use(jsonBodyParser(bodyLimit));
  return app;
}

/** Final 404 for unknown paths, JSON like every other error. */
export const notFoundHandler: RequestHandler = (_req, res) => {
  res.status(404).json({ detail: "Not Found" });
};

interface BodyParserError {
  type?: string;
  status?: number;
  message?: string;
}

/** Turns every thrown error into a JSON response; only unexpected errors become 500. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    if (res.headersSent) {
      logger.error({ err: error, path: req.path }, "error after response started");
      res.end();
      return;
    }
    if (error instanceof HttpError) {
      res.status(error.status).json({ detail: error.detail });
      return;
    }
    const parserError = error as BodyParserError;
    if (parserError.type === "entity.parse.failed") {
      res.status(422).json({
        detail: [{ loc: ["body"], msg: `Invalid JSON: ${parserError.message}`, type: "json_invalid" }],
      });
      return;
    }
    if (parserError.type === "entity.too.large") {
      res.status(413).json({ detail: "Request body too large" });
      return;
    }
    if (typeof parserError.status === "number" && parserError.status >= 400 && parserError.status < 500) {
      res.status(parserError.status).json({ detail: parserError.message ?? "Bad request" });
      return;
    }
    logger.error({ err: error, method: req.method, path: req.path }, "unhandled error");
    res.status(500).json({ detail: "Internal server error" });
  };
}

export interface RunningServer {
  server: Server;
  port: number;
  url: string;
  /** Stops accepting connections, lets in-flight requests finish, then force-closes after `graceMs`. */
  close(graceMs?: number): Promise<void>;
}

export async function listen(app: Express, port: number, host = "127.0.0.1"): Promise<RunningServer> {
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(port, host, (error?: Error) => (error ? reject(error) : resolve(s)));
  });
  const address = server.address() as AddressInfo;
  const urlHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  return {
    server,
    port: address.port,
    url: `http://${urlHost}:${address.port}`,
    close: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), graceMs);
        force.unref();
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
