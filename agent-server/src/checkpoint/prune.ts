/**
 * Subgraph namespaces look like `node:<task_id>|inner:<task_id>`. When the latest root
 * checkpoint still has writes from a task (e.g. an interrupt raised inside a subgraph), resuming
 * re-runs that task with the same id and reads the latest checkpoint of the subgraph's
 * namespace, so those namespaces survive a prune; every other subgraph namespace is history.
 */
export function namespacesToKeep(namespaces: Iterable<string>, rootPendingTaskIds: ReadonlySet<string>): Set<string> {
  const keep = new Set<string>([""]);
  for (const namespace of namespaces) {
    const outermost = namespace.split("|")[0] ?? "";
    const taskId = outermost.slice(outermost.lastIndexOf(":") + 1);
    if (namespace !== "" && rootPendingTaskIds.has(taskId)) keep.add(namespace);
  }
  return keep;
}

/** Largest checkpoint id (uuid6 ids sort by time), or undefined for none. */
export function latestId(ids: Iterable<string>): string | undefined {
  let latest: string | undefined;
  for (const id of ids) if (latest === undefined || id > latest) latest = id;
  return latest;
}
