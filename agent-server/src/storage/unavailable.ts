import type { ErrorRequestHandler } from "express";
import {
  ClientClosedError,
  ClientOfflineError,
  ConnectionTimeoutError,
  DisconnectsClientError,
  ErrorReply,
  ReconnectStrategyError,
  SocketClosedUnexpectedlyError,
  SocketTimeoutError,
  TimeoutError,
} from "redis";

/** What the API answers (503) when a request failed because Redis could not serve it. */
export const STORAGE_UNAVAILABLE = "Storage is unavailable";

/** Errors of a connection that is down, being dropped by the watchdog, or being re-established. */
const CONNECTION_ERRORS = [
  ClientClosedError,
  ClientOfflineError,
  ConnectionTimeoutError,
  DisconnectsClientError,
  ReconnectStrategyError,
  SocketClosedUnexpectedlyError,
  SocketTimeoutError,
  TimeoutError,
];

/**
 * Replies of a Redis that is up but cannot serve for now: loading its data, busy in a script,
 * a read-only replica, out of memory, unable to persist. Other replies (WRONGTYPE, a script
 * error) are bugs and stay 500s.
 */
const TRANSIENT_REPLY = /^(LOADING|BUSY|MASTERDOWN|READONLY|OOM|MISCONF|TRYAGAIN|NOREPLICAS|CLUSTERDOWN)\b/;

/** Whether `error`, or an error it was caused by, says Redis is unreachable or cannot serve now. */
export function isStorageUnavailable(error: unknown): boolean {
  for (let current = error, hops = 0; current instanceof Error && hops < 5; current = current.cause, hops++) {
    if (CONNECTION_ERRORS.some((type) => current instanceof type)) return true;
    if (current instanceof ErrorReply && TRANSIENT_REPLY.test(current.message)) return true;
    const code = (current as NodeJS.ErrnoException).code;
    if (code === "ECONNREFUSED" || code === "ECONNRESET" || code === "EPIPE" || code === "ETIMEDOUT") return true;
  }
  return false;
}

/**
 * Answers requests that failed on an unavailable Redis with 503 `{detail: "Storage is
 * unavailable"}` and `Retry-After: 1`: the client may retry, nothing about its request was wrong,
 * and the server itself is fine (a 500 would page someone for an outage the health check reports).
 */
export const storageUnavailableHandler: ErrorRequestHandler = (error, _req, res, next) => {
  if (res.headersSent || !isStorageUnavailable(error)) return next(error);
  res.status(503).set("Retry-After", "1").json({ detail: STORAGE_UNAVAILABLE });
};
