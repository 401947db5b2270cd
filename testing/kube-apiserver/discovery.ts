import { apiVersionOf, type ResourceRegistry, type ResourceType } from "./resources.ts";

const VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

export const VERSION_INFO = {
  major: "1",
  minor: "32",
  gitVersion: "v1.32.0-agentplane-test",
  gitCommit: "0000000000000000000000000000000000000000",
  gitTreeState: "clean",
  buildDate: "2026-01-01T00:00:00Z",
  goVersion: "go1.23",
  compiler: "gc",
  platform: "linux/amd64",
};

function resourceEntries(type: ResourceType): Record<string, unknown>[] {
  const main = {
    name: type.plural,
    singularName: type.singular,
    namespaced: type.namespaced,
    kind: type.kind,
    verbs: VERBS,
    ...(type.shortNames.length > 0 ? { shortNames: type.shortNames } : {}),
    ...(type.categories.length > 0 ? { categories: type.categories } : {}),
  };
  if (!type.statusSubresource) return [main];
  const status = {
    name: `${type.plural}/status`,
    singularName: "",
    namespaced: type.namespaced,
    kind: type.kind,
    verbs: ["get", "patch", "update"],
  };
  // pods/log: served by forwarding to the pod's kubelet (pod-log.ts).
  const log = { name: "pods/log", singularName: "", namespaced: true, kind: "Pod", verbs: ["get"] };
  return type.group === "" && type.plural === "pods" ? [main, status, log] : [main, status];
}

/** GET /api: the legacy group's versions. */
export function coreVersions(serverAddress: string): Record<string, unknown> {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
  };
}

function groupsOf(registry: ResourceRegistry): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const type of registry.all()) {
    if (!type.group) continue;
    const versions = groups.get(type.group) ?? [];
    if (!versions.includes(type.version)) versions.push(type.version);
    groups.set(type.group, versions);
  }
  return groups;
}

function groupEntry(name: string, versions: string[]): Record<string, unknown> {
  const entries = versions.map((version) => ({ groupVersion: `${name}/${version}`, version }));
  return { name, versions: entries, preferredVersion: entries[0] };
}

/** GET /apis */
export function groupList(registry: ResourceRegistry): Record<string, unknown> {
  const groups = [...groupsOf(registry)].map(([name, versions]) => groupEntry(name, versions));
  return { kind: "APIGroupList", apiVersion: "v1", groups };
}

/** GET /apis/<group> */
export function group(registry: ResourceRegistry, name: string): Record<string, unknown> | undefined {
  const versions = groupsOf(registry).get(name);
  return versions && { kind: "APIGroup", apiVersion: "v1", ...groupEntry(name, versions) };
}

/** GET /api/v1 or /apis/<group>/<version> */
export function resourceList(registry: ResourceRegistry, groupVersion: string): Record<string, unknown> | undefined {
  const types = registry.all().filter((type) => apiVersionOf(type) === groupVersion);
  if (types.length === 0) return undefined;
  return { kind: "APIResourceList", apiVersion: "v1", groupVersion, resources: types.flatMap(resourceEntries) };
}
