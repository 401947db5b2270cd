import { badRequest } from "./errors.ts";
import type { KubeObject } from "./store.ts";

export type Selector = (object: KubeObject) => boolean;

interface Requirement {
  key: string;
  operator: "=" | "!=" | "in" | "notin" | "exists" | "!exists";
  values: string[];
}

/** Splits on commas outside parentheses: `a in (x,y),b` → [`a in (x,y)`, `b`]. */
function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = "";
  for (const char of selector) {
    if (char === "(") depth += 1;
    if (char === ")") depth -= 1;
    if (char === "," && depth === 0) {
      terms.push(current);
      current = "";
    } else current += char;
  }
  terms.push(current);
  return terms.map((t) => t.trim()).filter((t) => t.length > 0);
}

function parseRequirement(term: string): Requirement {
  const set = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
  if (set) {
    const values = (set[3] ?? "").split(",").map((v) => v.trim());
    return { key: set[1] ?? "", operator: set[2] as "in" | "notin", values };
  }
  const comparison = /^([^!=\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(term);
  if (comparison) {
    const operator = comparison[2] === "!=" ? "!=" : "=";
    return { key: comparison[1] ?? "", operator, values: [comparison[3] ?? ""] };
  }
  if (/^![^!=\s()]+$/.test(term)) return { key: term.slice(1), operator: "!exists", values: [] };
  if (/^[^!=\s()]+$/.test(term)) return { key: term, operator: "exists", values: [] };
  throw badRequest(`unable to parse requirement: ${JSON.stringify(term)}`);
}

function matches(requirement: Requirement, value: string | undefined): boolean {
  switch (requirement.operator) {
    case "=":
      return value === requirement.values[0];
    case "!=":
      return value !== requirement.values[0];
    case "in":
      return value !== undefined && requirement.values.includes(value);
    case "notin":
      return value === undefined || !requirement.values.includes(value);
    case "exists":
      return value !== undefined;
    case "!exists":
      return value === undefined;
  }
}

export function labelSelector(selector: string | undefined): Selector {
  const requirements = splitTerms(selector ?? "").map(parseRequirement);
  return (object) => requirements.every((r) => matches(r, object.metadata.labels?.[r.key]));
}

/** Fields every kind supports, as the apiserver's default field selector does. */
const FIELDS: Record<string, (object: KubeObject) => string | undefined> = {
  "metadata.name": (o) => o.metadata.name,
  "metadata.namespace": (o) => o.metadata.namespace ?? "",
};

const KIND_FIELDS: Record<string, (object: KubeObject) => string | undefined> = {
  "spec.nodeName": (o) => nested(o, "spec", "nodeName"),
  "status.phase": (o) => nested(o, "status", "phase"),
  type: (o) => (typeof o.type === "string" ? o.type : ""),
  reason: (o) => (typeof o.reason === "string" ? o.reason : ""),
};

function nested(object: KubeObject, parent: string, field: string): string {
  const value = (object[parent] as Record<string, unknown> | undefined)?.[field];
  return value === undefined || value === null ? "" : String(value);
}

/** Events (core and events.k8s.io) select on any field of the object they are about. */
function eventField(key: string): ((object: KubeObject) => string) | undefined {
  const [parent, field, ...rest] = key.split(".");
  if ((parent !== "involvedObject" && parent !== "regarding") || !field || rest.length > 0) return undefined;
  return (object) => nested(object, parent, field);
}

export function fieldSelector(selector: string | undefined): Selector {
  const requirements = splitTerms(selector ?? "").map(parseRequirement);
  const getters = requirements.map((requirement) => {
    if (requirement.operator !== "=" && requirement.operator !== "!=") {
      throw badRequest(`invalid field selector: ${JSON.stringify(selector)}`);
    }
    const getter = FIELDS[requirement.key] ?? KIND_FIELDS[requirement.key] ?? eventField(requirement.key);
    if (!getter) {
      throw badRequest(`field label not supported: ${requirement.key}`);
    }
    return getter;
  });
  return (object) => requirements.every((r, i) => matches(r, getters[i]?.(object)));
}
