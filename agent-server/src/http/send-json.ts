import type { Response } from "express";
import type { JsonParts } from "../stream/references.ts";

/**
 * Answers with JSON made in pieces, as `res.json` sends the whole text (status 200, the same
 * content type, its length), without joining the pieces: a long conversation's state is one of
 * them, made already. A route handler that calls this returns nothing (`mountRoutes`).
 */
export function sendJsonParts(res: Response, parts: JsonParts): void {
  let length = 0;
  for (const part of parts) length += part.length;
  res.writeHead(200, { "Content-Type": "application/json; charset=utf-8", "Content-Length": String(length) });
  for (const part of parts) res.write(part);
  res.end();
}
