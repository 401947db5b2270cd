import { JSON_TYPES, unprocessable, type ValidationIssue } from "@agentplane/common";
import express, { type RequestHandler } from "express";

/**
 * How deep and how wide request JSON may be. Checked on the raw bytes before anything parses or
 * walks them: recursive code (validation, merging, serializing, matching filters) overflows the
 * stack on JSON nested a few thousand levels, and Redis scripts fail on objects with tens of
 * thousands of keys.
 */
export interface JsonLimits {
  /** Most nested objects and arrays, the outermost counting as 1. */
  maxDepth: number;
  /** Most keys in any one object (arrays are bounded by the body size only). */
  maxKeys: number;
}

export const DEFAULT_JSON_LIMITS: JsonLimits = { maxDepth: 256, maxKeys: 10_000 };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** Index of the quote closing the string whose opening quote is at `open` (-1: unterminated). */
function stringEnd(bytes: Uint8Array, open: number): number {
  let quote = bytes.indexOf(QUOTE, open + 1);
  while (quote !== -1) {
    let backslashes = 0;
    while (bytes[quote - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    quote = bytes.indexOf(QUOTE, quote + 1);
  }
  return -1;
}

/**
 * What makes `bytes` (UTF-8 JSON, well-formed or not) exceed `limits`, or undefined. One pass, no
 * recursion, memory bounded by `maxDepth`; malformed input is left for `JSON.parse` to report.
 * Strings are skipped with `indexOf`, so their content costs next to nothing. An object's keys
 * are counted by the colons at its own level.
 */
export function jsonLimitProblem(bytes: Uint8Array, limits: JsonLimits = DEFAULT_JSON_LIMITS): string | undefined {
  // keys[d]: keys seen so far in the open object at depth d, or -1 when it is an array.
  const keys = new Int32Array(limits.maxDepth + 1);
  let depth = 0;
  for (let i = 0; i < bytes.length; i++) {
    switch (bytes[i]) {
      case QUOTE:
        i = stringEnd(bytes, i);
        if (i === -1) return undefined;
        break;
      case OPEN_OBJECT:
      case OPEN_ARRAY:
        if (depth === limits.maxDepth) return `JSON is nested deeper than ${limits.maxDepth} levels`;
        depth++;
        keys[depth] = bytes[i] === OPEN_OBJECT ? 0 : -1;
        break;
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        if (depth > 0) depth--;
        break;
      case COLON: {
        const seen = keys[depth] ?? -1;
        if (depth === 0 || seen < 0) break;
        if (seen === limits.maxKeys) return `a JSON object has more than ${limits.maxKeys} keys`;
        keys[depth] = seen + 1;
        break;
      }
    }
  }
  return undefined;
}

const tooComplex = (loc: (string | number)[], msg: string): ValidationIssue => ({ loc, msg, type: "json_too_complex" });

const LIMIT_ERROR_TYPE = "entity.json.too.complex";

/** The bytes to scan: the body as received, or re-encoded as UTF-8 when it came in another charset. */
const utf8 = (body: Buffer, encoding: string | null) =>
  encoding === null || encoding.toLowerCase() === "utf-8" ? body : Buffer.from(new TextDecoder(encoding).decode(body));

/**
 * Parses JSON bodies (`application/json`, `application/*+json`) up to `bodyLimit`, refusing with
 * 422 `json_too_complex` those nested or wide beyond `limits` before `JSON.parse` runs.
 */
export function jsonBody(bodyLimit: string, limits: JsonLimits = DEFAULT_JSON_LIMITS): RequestHandler {
  const parse = express.json({
    limit: bodyLimit,
    type: JSON_TYPES,
    verify: (_req, _res, body, encoding) => {
      const problem = jsonLimitProblem(utf8(body, encoding), limits);
      if (problem) throw Object.assign(new Error(problem), { type: LIMIT_ERROR_TYPE });
    },
  });
  return (req, res, next) =>
    parse(req, res, (error?: unknown) => {
      const failure = error as { type?: string; message?: string } | undefined;
      if (failure?.type === LIMIT_ERROR_TYPE) next(unprocessable([tooComplex(["body"], String(failure.message))]));
      else next(error);
    });
}

/** Every string in a parsed query (the extended parser nests `a[b]=…` into objects and arrays). */
function* queryStrings(value: unknown, name: string): Generator<[string, string]> {
  if (typeof value === "string") yield [name, value];
  else if (value && typeof value === "object") for (const item of Object.values(value)) yield* queryStrings(item, name);
}

/**
 * Refuses query parameters holding JSON (`stream_mode=["values"]`, filters) beyond `limits` with
 * 422 at the parameter; the query parser's own nesting is shallow (depth 5, 1,000 parameters).
 */
export function jsonQueryLimits(limits: JsonLimits = DEFAULT_JSON_LIMITS): RequestHandler {
  return (req, _res, next) => {
    for (const [name, value] of Object.entries(req.query)) {
      for (const [, text] of queryStrings(value, name)) {
        const first = text.trimStart()[0];
        if (first !== "{" && first !== "[") continue;
        const problem = jsonLimitProblem(Buffer.from(text), limits);
        if (problem) return next(unprocessable([tooComplex(["query", name], problem)]));
      }
    }
    next();
  };
}
