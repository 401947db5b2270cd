import { parseQuantity } from "@agentplane/crds";
import type { KubeApi } from "./api.ts";
import { onNamespaceChanges } from "./controller-loop.ts";
import type { KubeObject } from "./store.ts";

/**
 * ResourceQuota for Pods: the admission plugin (a Pod that would take the namespace over a quota's
 * `hard` is refused with the apiserver's wording) and the quota controller's `status.hard`/`used`.
 * Counted: `pods`, `count/pods`, `cpu`/`requests.cpu`, `memory`/`requests.memory`, `limits.cpu`,
 * `limits.memory`. Quotas with `scopes` or a `scopeSelector` are not applied.
 */

type Json = Record<string, any>;
type Usage = Map<string, number>;

const COMPUTE = ["cpu", "memory"] as const;
/** Quota'd resources every container must then state (BACKWARD COMPATIBILITY in the quota evaluator). */
const MUST_SPECIFY = new Set(["cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"]);

function containerAmounts(container: Json, resource: string): { request?: number; limit?: number } {
  const limit = parseQuantity(container.resources?.limits?.[resource]);
  // A limit with no request is also the request (the apiserver's Pod defaulting).
  const request = parseQuantity(container.resources?.requests?.[resource]) ?? limit;
  return { ...(request === undefined ? {} : { request }), ...(limit === undefined ? {} : { limit }) };
}

/** What one container states, as quota resource names (`cpu`, `requests.cpu`, `limits.cpu`, …). */
function statedResources(container: Json): Set<string> {
  const stated = new Set<string>();
  for (const resource of COMPUTE) {
    const { request, limit } = containerAmounts(container, resource);
    if (request !== undefined) stated.add(resource).add(`requests.${resource}`);
    if (limit !== undefined) stated.add(`limits.${resource}`);
  }
  return stated;
}

/** A pod's usage: sum over its containers and sidecars, or the largest init container if more. */
export function podUsage(pod: KubeObject): Usage {
  const spec = (pod.spec ?? {}) as Json;
  const init: Json[] = spec.initContainers ?? [];
  const running = [...(spec.containers ?? []), ...init.filter((c) => c.restartPolicy === "Always")];
  const oneShot = init.filter((c) => c.restartPolicy !== "Always");
  const usage: Usage = new Map([
    ["pods", 1],
    ["count/pods", 1],
  ]);
  for (const resource of COMPUTE) {
    for (const kind of ["request", "limit"] as const) {
      const sum = running.reduce((total, c) => total + (containerAmounts(c, resource)[kind] ?? 0), 0);
      const amount = Math.max(sum, ...oneShot.map((c) => containerAmounts(c, resource)[kind] ?? 0));
      if (kind === "request") usage.set(resource, amount).set(`requests.${resource}`, amount);
      else usage.set(`limits.${resource}`, amount);
    }
  }
  return usage;
}

/** Pods that count against quota: not finished (Succeeded or Failed). */
function counted(pod: KubeObject): boolean {
  const phase = (pod.status as Json | undefined)?.phase;
  return phase !== "Succeeded" && phase !== "Failed";
}

function applies(quota: KubeObject): boolean {
  const spec = (quota.spec ?? {}) as Json;
  return !(spec.scopes?.length > 0) && !spec.scopeSelector;
}

function hardOf(quota: KubeObject): [string, number][] {
  const hard = ((quota.spec as Json | undefined)?.hard ?? {}) as Record<string, unknown>;
  return Object.entries(hard).flatMap(([name, value]) => {
    const amount = parseQuantity(value);
    return amount === undefined ? [] : [[name, amount] as [string, number]];
  });
}

function usedBy(pods: readonly KubeObject[], names: readonly string[]): Usage {
  const used: Usage = new Map(names.map((name) => [name, 0]));
  for (const pod of pods.filter(counted)) {
    for (const [name, amount] of podUsage(pod)) if (used.has(name)) used.set(name, (used.get(name) ?? 0) + amount);
  }
  return used;
}

/** A quantity the way Quantity.String() prints it, close enough for the messages (`500m`, `2`, `256Mi`). */
export function formatQuantity(name: string, value: number): string {
  if (!name.endsWith("memory") && !Number.isInteger(value)) return `${Math.round(value * 1000)}m`;
  for (const [suffix, size] of [
    ["Gi", 2 ** 30],
    ["Mi", 2 ** 20],
    ["Ki", 2 ** 10],
  ] as const) {
    if (value >= size && value % size === 0) return `${value / size}${suffix}`;
  }
  return String(value);
}

const pretty = (entries: [string, number][]) =>
  entries
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `${name}=${formatQuantity(name, value)}`)
    .join(",");

/**
 * Why the quota admission plugin refuses `pod` among the namespace's `pods`, in the apiserver's words
 * (after `pods "<name>" is forbidden: `), or undefined when every quota admits it.
 */
export function quotaRefusal(
  quotas: readonly KubeObject[],
  pods: readonly KubeObject[],
  pod: KubeObject,
): string | undefined {
  const spec = (pod.spec ?? {}) as Json;
  const containers: Json[] = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
  const usage = podUsage(pod);
  for (const quota of [...quotas].filter(applies).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))) {
    const hard = hardOf(quota);
    const required = hard.map(([name]) => name).filter((name) => MUST_SPECIFY.has(name));
    const missing = new Map<string, string[]>();
    for (const container of containers) {
      const stated = statedResources(container);
      for (const name of required)
        if (!stated.has(name)) missing.set(name, [...(missing.get(name) ?? []), container.name]);
    }
    if (missing.size > 0) {
      const what = [...missing.keys()]
        .sort()
        .map((name) => `${name} for: ${[...(missing.get(name) ?? [])].sort().join(",")}`);
      return `failed quota: ${quota.metadata.name}: must specify ${what.join("; ")}`;
    }
    const used = usedBy(
      pods,
      hard.map(([name]) => name),
    );
    const exceeded = hard.filter(
      ([name, limit]) => usage.has(name) && (used.get(name) ?? 0) + (usage.get(name) ?? 0) > limit,
    );
    if (exceeded.length > 0) {
      const requested = exceeded.map(([name]) => [name, usage.get(name) ?? 0] as [string, number]);
      const inUse = exceeded.map(([name]) => [name, used.get(name) ?? 0] as [string, number]);
      return `exceeded quota: ${quota.metadata.name}, requested: ${pretty(requested)}, used: ${pretty(inUse)}, limited: ${pretty(exceeded)}`;
    }
  }
  return undefined;
}

/** The quota controller: keeps each ResourceQuota's `status.hard` and `status.used` current. */
export function runQuotaController(api: KubeApi): () => void {
  const quotas = api.resource("v1", "resourcequotas");
  const pods = api.resource("v1", "pods");
  return onNamespaceChanges(api, ["/pods", "/resourcequotas"], (namespace) => {
    for (const quota of api.store.list(quotas, namespace)) {
      const hard = hardOf(quota);
      const used = usedBy(
        api.store.list(pods, namespace),
        hard.map(([name]) => name),
      );
      const format = (entries: [string, number][]) =>
        Object.fromEntries(entries.map(([name, value]) => [name, formatQuantity(name, value)]));
      const status = { hard: (quota.spec as Json | undefined)?.hard ?? {}, used: format([...used]) };
      if (JSON.stringify(status) === JSON.stringify(quota.status)) continue;
      api.update(
        quotas,
        namespace,
        quota.metadata.name,
        { ...quota, status },
        {
          subresource: "status",
          fieldManager: "kube-controller-manager",
        },
      );
    }
  });
}
