import { isDeepStrictEqual } from "node:util";
import type { ListNamespacesOperation, MatchCondition } from "@langchain/langgraph-checkpoint";

/**
 * Pure parts of the long-term store shared by the memory and Redis backends: filters,
 * namespace matching, ordering and paging.
 */

const OPERATORS = new Set(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"]);

const isOperatorObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" &&
  value !== null &&
  !Array.isArray(value) &&
  Object.keys(value).length > 0 &&
  Object.keys(value).every((key) => OPERATORS.has(key));

/** Orders numbers with numbers and strings with strings; anything else is not comparable. */
function compare(actual: unknown, expected: unknown): number | undefined {
  if (typeof actual === "number" && typeof expected === "number") return actual - expected;
  if (typeof actual === "string" && typeof expected === "string")
    return actual < expected ? -1 : actual > expected ? 1 : 0;
  return undefined;
}

function matchesOperator(actual: unknown, operator: string, expected: unknown): boolean {
  const order = compare(actual, expected);
  switch (operator) {
    case "$eq":
      return isDeepStrictEqual(actual, expected);
    case "$ne":
      return !isDeepStrictEqual(actual, expected);
    case "$gt":
      return order !== undefined && order > 0;
    case "$gte":
      return order !== undefined && order >= 0;
    case "$lt":
      return order !== undefined && order < 0;
    case "$lte":
      return order !== undefined && order <= 0;
    case "$in":
      return Array.isArray(expected) && expected.some((candidate) => isDeepStrictEqual(actual, candidate));
    default:
      return !Array.isArray(expected) || !expected.some((candidate) => isDeepStrictEqual(actual, candidate));
  }
}

/**
 * Every filter key must match the value's top-level field: plain values by deep equality,
 * operator objects (`{$gte: 3, $lt: 9}`) by every operator.
 */
export function matchesFilter(value: Record<string, unknown>, filter: Record<string, unknown> | undefined): boolean {
  if (!filter) return true;
  return Object.entries(filter).every(([field, expected]) => {
    const actual = value[field];
    if (isOperatorObject(expected)) {
      return Object.entries(expected).every(([operator, operand]) => matchesOperator(actual, operator, operand));
    }
    return isDeepStrictEqual(actual, expected);
  });
}

export function namespaceMatches(condition: MatchCondition, namespace: string[]): boolean {
  const { path } = condition;
  if (path.length > namespace.length) return false;
  const offset = condition.matchType === "prefix" ? 0 : namespace.length - path.length;
  return path.every((label, index) => label === "*" || label === namespace[offset + index]);
}

/** The literal labels a prefix condition starts with (up to its first wildcard), for index range scans. */
export function literalPrefix(conditions: MatchCondition[] | undefined): string[] {
  const prefix = conditions?.find((condition) => condition.matchType === "prefix")?.path ?? [];
  const wildcard = prefix.indexOf("*");
  return wildcard === -1 ? [...prefix] : prefix.slice(0, wildcard);
}

export function compareNamespaces(a: string[], b: string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i += 1) {
    const [left, right] = [a[i] as string, b[i] as string];
    if (left !== right) return left < right ? -1 : 1;
  }
  return a.length - b.length;
}

/** Applies match conditions, max depth (truncate + dedupe), sorting and paging to namespaces. */
export function selectNamespaces(namespaces: string[][], operation: ListNamespacesOperation): string[][] {
  const conditions = operation.matchConditions ?? [];
  const matching = namespaces.filter((namespace) => conditions.every((c) => namespaceMatches(c, namespace)));
  const truncated =
    operation.maxDepth === undefined ? matching : matching.map((namespace) => namespace.slice(0, operation.maxDepth));
  const unique = [...new Map(truncated.map((namespace) => [JSON.stringify(namespace), namespace])).values()];
  unique.sort(compareNamespaces);
  const offset = operation.offset ?? 0;
  return unique.slice(offset, offset + (operation.limit ?? unique.length));
}

export function isWithinPrefix(namespace: string[], prefix: string[]): boolean {
  return prefix.every((label, index) => namespace[index] === label);
}
