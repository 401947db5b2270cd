import { isDeepStrictEqual } from "node:util";
import { badRequest, KubeError } from "./errors.ts";

type Json = unknown;
type JsonObject = Record<string, Json>;

export function isObject(value: Json): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** RFC 7386 JSON merge patch: objects merge recursively, `null` removes, everything else replaces. */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  const result: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

/**
 * Merge keys of built-in lists that strategic merge patch and server-side apply merge per item
 * (the patchMergeKey tags of the Kubernetes Go types used by this project's objects).
 */
const BUILTIN_MERGE_KEYS: Record<string, string[]> = {
  containers: ["name"],
  initContainers: ["name"],
  ephemeralContainers: ["name"],
  env: ["name"],
  volumes: ["name"],
  volumeMounts: ["mountPath"],
  imagePullSecrets: ["name"],
  conditions: ["type"],
  ownerReferences: ["uid"],
  ports: ["containerPort", "port"],
};

/** The merge key of a built-in list field, picked by which key its items carry. */
export function builtinMergeKey(field: string, items: Json[]): string | undefined {
  const candidates = BUILTIN_MERGE_KEYS[field];
  const sample = items.find(isObject);
  return candidates?.find((key) => sample === undefined || key in sample);
}

/** Strategic merge patch for built-in kinds: merge-patch plus per-item merging of keyed lists and `$patch` directives. */
export function strategicMergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  if (patch.$patch === "replace") {
    const { $patch: _directive, ...rest } = patch;
    return structuredClone(rest);
  }
  const result: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$setElementOrder/") || key === "$retainKeys" || key === "$patch") continue;
    if (key.startsWith("$deleteFromPrimitiveList/")) {
      const field = key.slice("$deleteFromPrimitiveList/".length);
      const current = result[field];
      if (Array.isArray(current) && Array.isArray(value)) result[field] = current.filter((v) => !value.includes(v));
      continue;
    }
    if (value === null) delete result[key];
    else if (Array.isArray(value)) result[key] = mergeKeyedList(key, result[key], value);
    else result[key] = strategicMergePatch(result[key], value);
  }
  return result;
}

function mergeKeyedList(field: string, current: Json, patch: Json[]): Json[] {
  const mergeKey = builtinMergeKey(field, patch);
  if (!mergeKey || !Array.isArray(current) || !patch.every(isObject)) {
    return patch.filter((item) => !(isObject(item) && item.$patch === "delete")).map((item) => structuredClone(item));
  }
  const merged = [...current];
  for (const item of patch as JsonObject[]) {
    const index = merged.findIndex((existing) => isObject(existing) && existing[mergeKey] === item[mergeKey]);
    if (item.$patch === "delete") {
      if (index >= 0) merged.splice(index, 1);
    } else if (index >= 0) merged[index] = strategicMergePatch(merged[index], item);
    else merged.push(strategicMergePatch({}, item));
  }
  return merged;
}

interface JsonPatchOperation {
  op: "add" | "remove" | "replace" | "move" | "copy" | "test";
  path: string;
  from?: string;
  value?: Json;
}

function parsePointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw badRequest(`invalid JSON pointer: ${JSON.stringify(pointer)}`);
  return pointer
    .slice(1)
    .split("/")
    .map((token) => token.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function unprocessable(message: string): KubeError {
  return new KubeError(422, "Invalid", `the server rejected our request due to an error in our request: ${message}`);
}

function resolveParent(
  document: Json,
  tokens: string[],
  pointer: string,
): { parent: JsonObject | Json[]; key: string } {
  let node = document;
  for (const token of tokens.slice(0, -1)) {
    const next = Array.isArray(node) ? node[Number(token)] : isObject(node) ? node[token] : undefined;
    if (next === undefined) throw unprocessable(`doc is missing path: "${pointer}"`);
    node = next;
  }
  if (!Array.isArray(node) && !isObject(node)) throw unprocessable(`doc is missing path: "${pointer}"`);
  return { parent: node, key: tokens.at(-1) ?? "" };
}

function getAt(document: Json, pointer: string): Json {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) return document;
  const { parent, key } = resolveParent(document, tokens, pointer);
  const value = Array.isArray(parent) ? parent[Number(key)] : parent[key];
  if (value === undefined) throw unprocessable(`doc is missing path: "${pointer}"`);
  return value;
}

function removeAt(document: Json, pointer: string): Json {
  const { parent, key } = resolveParent(document, parsePointer(pointer), pointer);
  if (Array.isArray(parent)) {
    const index = Number(key);
    if (!Number.isInteger(index) || index < 0 || index >= parent.length)
      throw unprocessable(`index out of range: "${pointer}"`);
    return parent.splice(index, 1)[0];
  }
  if (!(key in parent)) throw unprocessable(`doc is missing key: "${pointer}"`);
  const value = parent[key];
  delete parent[key];
  return value;
}

function addAt(document: Json, pointer: string, value: Json, replace: boolean): Json {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) return structuredClone(value);
  const { parent, key } = resolveParent(document, tokens, pointer);
  if (Array.isArray(parent)) {
    const index = key === "-" ? parent.length : Number(key);
    if (!Number.isInteger(index) || index < 0 || index > parent.length - (replace ? 1 : 0)) {
      throw unprocessable(`index out of range: "${pointer}"`);
    }
    parent.splice(index, replace ? 1 : 0, structuredClone(value));
  } else {
    if (replace && !(key in parent)) throw unprocessable(`doc is missing key: "${pointer}"`);
    parent[key] = structuredClone(value);
  }
  return document;
}

/** RFC 6902 JSON patch; a failed `test` or a missing path is 422, like the apiserver. */
export function jsonPatch(target: Json, operations: Json): Json {
  if (!Array.isArray(operations)) throw badRequest("json patch must be an array of operations");
  let document = structuredClone(target);
  for (const operation of operations as JsonPatchOperation[]) {
    if (!isObject(operation) || typeof operation.path !== "string") throw badRequest("invalid json patch operation");
    switch (operation.op) {
      case "add":
        document = addAt(document, operation.path, operation.value, false);
        break;
      case "replace":
        document = addAt(document, operation.path, operation.value, true);
        break;
      case "remove":
        removeAt(document, operation.path);
        break;
      case "move":
        document = addAt(document, operation.path, removeAt(document, operation.from ?? ""), false);
        break;
      case "copy":
        document = addAt(document, operation.path, getAt(document, operation.from ?? ""), false);
        break;
      case "test":
        if (!isDeepStrictEqual(getAt(document, operation.path), operation.value)) {
          throw unprocessable(`testing value ${operation.path} failed`);
        }
        break;
      default:
        throw badRequest(`unknown json patch operation ${JSON.stringify((operation as JsonObject).op)}`);
    }
  }
  return document;
}
