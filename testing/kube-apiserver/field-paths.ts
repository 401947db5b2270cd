import { isDeepStrictEqual } from "node:util";
import type { OpenApiSchema } from "@agentplane/crds";
import { builtinMergeKey, isObject } from "./patch.ts";

/** One step of a field path: an object key, or a list item named by its key fields. */
export type PathStep = string | { key: Record<string, unknown> };
export type FieldPath = PathStep[];

/**
 * Says how a list is merged: by the keys of its items (a "map" list, like containers by name or
 * conditions by type), or atomically (replaced as a whole).
 */
export type ListKeys = (schema: OpenApiSchema | undefined, field: string, items: unknown[]) => string[] | undefined;

export const listKeysFor: ListKeys = (schema, field, items) => {
  if (schema) return schema["x-kubernetes-list-type"] === "map" ? schema["x-kubernetes-list-map-keys"] : undefined;
  const key = builtinMergeKey(field, items);
  return key ? [key] : undefined;
};

const UNDECLARED: OpenApiSchema = { "x-kubernetes-preserve-unknown-fields": true };

export function childSchema(schema: OpenApiSchema | undefined, step: PathStep): OpenApiSchema | undefined {
  if (!schema) return undefined;
  if (typeof step !== "string") return schema.items;
  const declared = schema.properties?.[step];
  if (declared) return declared;
  if (typeof schema.additionalProperties === "object") return schema.additionalProperties;
  // Undeclared (preserved) fields of a custom resource: maps stay granular, lists atomic.
  return UNDECLARED;
}

function itemKey(item: unknown, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.map((key) => [key, isObject(item) ? item[key] : undefined]));
}

export function findItem(list: unknown[], key: Record<string, unknown>): number {
  return list.findIndex(
    (item) => isObject(item) && Object.entries(key).every(([k, v]) => isDeepStrictEqual(item[k], v)),
  );
}

/** Every leaf field the value sets, plus each keyed list item itself (so an item can be owned and removed). */
export function leafPaths(value: unknown, schema: OpenApiSchema | undefined, prefix: FieldPath = []): FieldPath[] {
  if (!isObject(value) || Object.keys(value).length === 0) return [prefix];
  const paths: FieldPath[] = [];
  for (const [field, child] of Object.entries(value)) {
    const path = [...prefix, field];
    const fieldSchema = childSchema(schema, field);
    const keys = Array.isArray(child) ? listKeysFor(fieldSchema, field, child) : undefined;
    if (Array.isArray(child) && keys) {
      for (const item of child) {
        const itemPath = [...path, { key: itemKey(item, keys) }];
        paths.push(
          itemPath,
          ...leafPaths(item, fieldSchema?.items, itemPath).filter((p) => p.length > itemPath.length),
        );
      }
    } else {
      paths.push(...leafPaths(child, fieldSchema, path));
    }
  }
  return paths;
}

export function valueAt(value: unknown, path: FieldPath): unknown {
  let node = value;
  for (const step of path) {
    if (typeof step === "string") node = isObject(node) ? node[step] : undefined;
    else node = Array.isArray(node) ? node[findItem(node, step.key)] : undefined;
    if (node === undefined) return undefined;
  }
  return node;
}

/** Removes the field at `path`, then any objects left empty on the way up. */
export function removeAt(value: unknown, path: FieldPath): void {
  const parents: [unknown, PathStep][] = [];
  let node = value;
  for (const step of path.slice(0, -1)) {
    parents.push([node, step]);
    node = valueAt(node, [step]);
    if (node === undefined) return;
  }
  const last = path.at(-1);
  if (last === undefined) return;
  if (typeof last === "string" && isObject(node)) delete node[last];
  else if (typeof last !== "string" && Array.isArray(node)) {
    const index = findItem(node, last.key);
    if (index >= 0) node.splice(index, 1);
  }
  for (const [parent, step] of parents.reverse()) {
    const child = valueAt(parent, [step]);
    if (!isObject(child) || Object.keys(child).length > 0 || typeof step !== "string" || !isObject(parent)) break;
    delete parent[step];
  }
}

/** Merges an applied configuration: objects recursively, keyed lists item by item, the rest replaced. */
export function mergeApplied(target: unknown, applied: unknown, schema: OpenApiSchema | undefined): unknown {
  if (!isObject(applied) || !isObject(target)) return structuredClone(applied);
  const result: Record<string, unknown> = { ...target };
  for (const [field, value] of Object.entries(applied)) {
    const fieldSchema = childSchema(schema, field);
    const current = result[field];
    const keys = Array.isArray(value) ? listKeysFor(fieldSchema, field, value) : undefined;
    if (Array.isArray(value) && keys && Array.isArray(current)) {
      const merged = [...current];
      for (const item of value) {
        const index = findItem(merged, itemKey(item, keys));
        if (index >= 0) merged[index] = mergeApplied(merged[index], item, fieldSchema?.items);
        else merged.push(structuredClone(item));
      }
      result[field] = merged;
    } else {
      result[field] = mergeApplied(current, value, fieldSchema);
    }
  }
  return result;
}

/** `.spec.conditions[type="Ready"].status`, the way apply conflicts name fields. */
export function formatPath(path: FieldPath): string {
  return path
    .map((step) =>
      typeof step === "string"
        ? `.${step}`
        : `[${Object.entries(step.key)
            .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
            .join(",")}]`,
    )
    .join("");
}

/** The FieldsV1 form of a set of paths, as shown in metadata.managedFields. */
export function toFieldsV1(paths: FieldPath[]): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const path of paths) {
    let node = root;
    path.forEach((step, i) => {
      const name = typeof step === "string" ? `f:${step}` : `k:${JSON.stringify(step.key)}`;
      const child = (node[name] ??= {}) as Record<string, unknown>;
      if (typeof step !== "string" && i < path.length - 1) child["."] = {};
      node = child;
    });
  }
  return root;
}
