import { isDeepStrictEqual } from "node:util";
import { KubeError } from "./errors.ts";
import { type FieldPath, formatPath, leafPaths, mergeApplied, removeAt, toFieldsV1, valueAt } from "./field-paths.ts";
import { isObject } from "./patch.ts";
import { apiVersionOf, type ResourceType } from "./resources.ts";
import type { KubeObject, ManagedFieldsEntry } from "./store.ts";

interface Ownership {
  manager: string;
  operation: "Apply" | "Update";
  subresource: string;
  apiVersion: string;
  time: string;
  paths: Map<string, FieldPath>;
}

export type Subresource = "" | "status";

const OWNABLE_METADATA = ["labels", "annotations", "finalizers", "ownerReferences"];

/** The part of an object an endpoint writes: status only on `/status`, everything but status elsewhere. */
function scoped(
  resource: ResourceType,
  object: Record<string, unknown>,
  subresource: Subresource,
): Record<string, unknown> {
  if (subresource === "status") return object.status === undefined ? {} : { status: object.status };
  const result: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(object)) {
    if (field === "apiVersion" || field === "kind" || (field === "status" && resource.statusSubresource)) continue;
    if (field === "metadata" && isObject(value)) {
      const metadata = Object.fromEntries(Object.entries(value).filter(([key]) => OWNABLE_METADATA.includes(key)));
      if (Object.keys(metadata).length > 0) result.metadata = metadata;
    } else result[field] = value;
  }
  return result;
}

/** Equal at a path; a keyed list item (a path ending in its key) only has to exist in both. */
function sameAt(a: unknown, b: unknown, path: FieldPath): boolean {
  const left = valueAt(a, path);
  const right = valueAt(b, path);
  if (typeof path.at(-1) === "object") return (left === undefined) === (right === undefined);
  return isDeepStrictEqual(left, right);
}

function pathMap(paths: FieldPath[]): Map<string, FieldPath> {
  return new Map(paths.map((path) => [JSON.stringify(path), path]));
}

function now(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, "Z");
}

/**
 * Field ownership per object, as server-side apply keeps it in metadata.managedFields. A
 * simplified model of structured-merge-diff: ownership is tracked per leaf field and per keyed
 * list item; lists without merge keys are owned as a whole.
 */
export class FieldManager {
  private readonly owners = new Map<string, Ownership[]>();

  managedFields(uid: string): ManagedFieldsEntry[] {
    return (this.owners.get(uid) ?? []).map((entry) => ({
      manager: entry.manager,
      operation: entry.operation,
      apiVersion: entry.apiVersion,
      time: entry.time,
      fieldsType: "FieldsV1",
      fieldsV1: toFieldsV1([...entry.paths.values()]),
      ...(entry.subresource ? { subresource: entry.subresource } : {}),
    }));
  }

  commit(uid: string, ownership: Ownership[]): void {
    this.owners.set(
      uid,
      ownership.filter((entry) => entry.paths.size > 0),
    );
  }

  forget(uid: string): void {
    this.owners.delete(uid);
  }

  /** New ownership after a non-apply write by `manager`: it takes every field it changed. */
  recordUpdate(
    resource: ResourceType,
    before: KubeObject | undefined,
    after: KubeObject,
    manager: string,
    subresource: Subresource,
  ): Ownership[] {
    const previous = before ? scoped(resource, before, subresource) : {};
    const next = scoped(resource, after, subresource);
    const nextPaths = leafPaths(next, resource.schema).filter((p) => p.length > 0);
    const changed = nextPaths.filter((path) => !sameAt(previous, next, path));
    const ownership = this.copy(after.metadata.uid);
    for (const entry of ownership.filter((e) => e.subresource === subresource)) {
      for (const [id, path] of entry.paths) if (valueAt(next, path) === undefined) entry.paths.delete(id);
    }
    if (changed.length === 0) return ownership;
    for (const entry of ownership) for (const path of changed) entry.paths.delete(JSON.stringify(path));
    const mine = this.entry(ownership, resource, manager, "Update", subresource);
    for (const path of changed) mine.paths.set(JSON.stringify(path), path);
    mine.time = now();
    return ownership;
  }

  /**
   * Server-side apply of `applied` over `current`: conflicts with other managers are a 409 unless
   * `force`; fields this manager applied before and now omits are removed unless someone else owns them.
   */
  apply(
    resource: ResourceType,
    current: KubeObject,
    applied: Record<string, unknown>,
    manager: string,
    force: boolean,
    subresource: Subresource,
  ): { object: KubeObject; ownership: Ownership[] } {
    const config = scoped(resource, applied, subresource);
    const live = scoped(resource, current, subresource);
    const appliedPaths = leafPaths(config, resource.schema).filter((p) => p.length > 0);
    const ownership = this.copy(current.metadata.uid);
    const others = ownership.filter(
      (e) => e.subresource === subresource && !(e.manager === manager && e.operation === "Apply"),
    );
    const conflicts = others.flatMap((entry) =>
      appliedPaths
        .filter((p) => entry.paths.has(JSON.stringify(p)) && !sameAt(live, config, p))
        .map((path) => ({ entry, path })),
    );
    if (conflicts.length > 0 && !force) throw applyConflict(conflicts.map((c) => [c.entry, c.path]));
    for (const { entry, path } of conflicts) entry.paths.delete(JSON.stringify(path));

    const mine = this.entry(ownership, resource, manager, "Apply", subresource);
    const next = pathMap(appliedPaths);
    const object = structuredClone(current);
    for (const [id, path] of mine.paths) {
      const ownedElsewhere = others.some((entry) => entry.paths.has(id));
      if (!next.has(id) && !ownedElsewhere) removeAt(object, path);
    }
    const merged = mergeApplied(object, config, resource.schema) as KubeObject;
    if (!isDeepStrictEqual([...mine.paths.keys()].sort(), [...next.keys()].sort())) mine.time = now();
    mine.paths = next;
    return { object: merged, ownership };
  }

  private copy(uid: string): Ownership[] {
    return (this.owners.get(uid) ?? []).map((entry) => ({ ...entry, paths: new Map(entry.paths) }));
  }

  private entry(
    ownership: Ownership[],
    resource: ResourceType,
    manager: string,
    operation: Ownership["operation"],
    subresource: Subresource,
  ): Ownership {
    const existing = ownership.find(
      (e) => e.manager === manager && e.operation === operation && e.subresource === subresource,
    );
    if (existing) return existing;
    const created: Ownership = {
      manager,
      operation,
      subresource,
      apiVersion: apiVersionOf(resource),
      time: now(),
      paths: new Map(),
    };
    ownership.push(created);
    return created;
  }
}

function applyConflict(conflicts: [Ownership, FieldPath][]): KubeError {
  const causes = conflicts.map(([entry, path]) => ({
    reason: "FieldManagerConflict",
    message: `conflict with "${entry.manager}"${entry.operation === "Update" ? ` using ${entry.apiVersion}` : ""}`,
    field: formatPath(path),
  }));
  const lines = causes.map((c) => `- ${c.message}: ${c.field}`).join("\n");
  const count = conflicts.length === 1 ? "1 conflict" : `${conflicts.length} conflicts`;
  return new KubeError(409, "Conflict", `Apply failed with ${count}:\n${lines}`, { causes });
}
