import type { NextFunction, Request, Response, Router } from "express";
import type { z } from "zod";
import { HttpError } from "./errors.ts";
import { JSON_TYPES } from "./http.ts";
import { parseRequestPart } from "./validation.ts";

type HttpMethod = "get" | "post" | "put" | "patch" | "delete";

export interface RouteContext<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  req: Request;
  res: Response;
}

/**
 * One endpoint: its zod schemas validate the request, type the handler and document the
 * operation in the OpenAPI document, so the three can never disagree.
 */
export interface Route<P = unknown, Q = unknown, B = unknown> {
  method: HttpMethod;
  /** express-style path, e.g. `/threads/:thread_id`. */
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  /** Schema of the success body; `null` documents an empty response. */
  response?: z.ZodType | null;
  /** Success status; 204 responses send no body. */
  status?: number;
  /** Extra documented error statuses besides 422. */
  errors?: number[];
  /** Other success statuses, with the same body, that the handler sends itself (e.g. 207 for partial success). */
  alsoStatus?: number[];
  /** Omit from the security requirement (public endpoints like `/ok`). */
  public?: boolean;
  /**
   * Returns the JSON body to send with `status`. A handler that has already written the
   * response (streams) returns `undefined` after `res.headersSent`.
   */
  handler: (ctx: RouteContext<P, Q, B>) => Promise<unknown> | unknown;
}

/** Identity helper that infers the handler's parameter types from the schemas. */
export function defineRoute<P = unknown, Q = unknown, B = unknown>(route: Route<P, Q, B>): Route<P, Q, B> {
  return route;
}

export type AnyRoute = Route<any, any, any>;

export function mountRoutes(router: Router, routes: AnyRoute[]): void {
  for (const route of routes) {
    router[route.method](route.path, async (req: Request, res: Response, next: NextFunction) => {
      try {
        // `is` is null without a body: a body of another type was not parsed, so say so. An empty
        // body of no type (a POST with nothing in it) is validated as `{}` instead.
        if (route.body && req.is(JSON_TYPES) === false && req.headers["content-length"] !== "0") {
          throw new HttpError(415, "Request body must be JSON (Content-Type: application/json)");
        }
        const params = route.params ? parseRequestPart(route.params, req.params, "path") : req.params;
        const query = route.query ? parseRequestPart(route.query, req.query, "query") : req.query;
        const body = route.body ? parseRequestPart(route.body, req.body ?? {}, "body") : req.body;
        const result = await route.handler({ params, query, body, req, res });
        if (res.headersSent) return;
        const status = route.status ?? 200;
        if (status === 204) res.status(204).end();
        else res.status(status).json(result ?? null);
      } catch (error) {
        next(error);
      }
    });
  }
}
