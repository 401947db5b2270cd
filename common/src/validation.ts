import type { z } from "zod";
import { HttpError, type ValidationIssue } from "./errors.ts";

export type RequestPart = "body" | "query" | "path" | "header";

/** Translates zod's issue codes into the short machine-readable `type` clients expect. */
function issueType(issue: z.core.$ZodIssue, input: unknown): string {
  switch (issue.code) {
    case "invalid_type":
      return input === undefined ? "missing" : `${issue.expected}_type`;
    case "invalid_value":
      return "enum";
    case "invalid_format":
      return `${issue.format}_parsing`;
    case "too_small":
      return issue.origin === "array" || issue.origin === "string" ? "too_short" : "greater_than_equal";
    case "too_big":
      return issue.origin === "array" || issue.origin === "string" ? "too_long" : "less_than_equal";
    case "invalid_union":
      return "union_invalid";
    default:
      return issue.code;
  }
}

function valueAt(root: unknown, path: PropertyKey[]): unknown {
  let current = root;
  for (const segment of path) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<PropertyKey, unknown>)[segment];
  }
  return current;
}

export function toValidationIssues(error: z.ZodError, part: RequestPart, input: unknown): ValidationIssue[] {
  return error.issues.flatMap((issue) => {
    const path = issue.path.map((segment) => (typeof segment === "symbol" ? String(segment) : segment));
    // One issue per extra key, located at the key itself (as Pydantic reports `extra_forbidden`).
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({
        loc: [part, ...path, key],
        msg: "Extra inputs are not permitted",
        type: "extra_forbidden",
      }));
    }
    const value = valueAt(input, issue.path);
    const missing = issue.code === "invalid_type" && value === undefined;
    return {
      loc: [part, ...path],
      msg: missing ? "Field required" : issue.message,
      type: issueType(issue, value),
    };
  });
}

/** Parses `input` with `schema`, throwing a 422 HttpError that names the request part on failure. */
export function parseRequestPart<S extends z.ZodType>(schema: S, input: unknown, part: RequestPart): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw new HttpError(422, toValidationIssues(result.error, part, input));
  return result.data;
}
