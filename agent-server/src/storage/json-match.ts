import { isDeepStrictEqual } from "node:util";

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Containment as the API's `metadata`/`values` filters define it: every key of `expected`
 * is present in `actual` with an equal value; objects are compared recursively, arrays and
 * scalars exactly.
 */
export function jsonContains(actual: unknown, expected: unknown): boolean {
  if (isPlainObject(expected)) {
    if (!isPlainObject(actual)) return false;
    return Object.entries(expected).every(([key, value]) => key in actual && jsonContains(actual[key], value));
  }
  return isDeepStrictEqual(actual, expected);
}
