import type { KubeApi } from "./api.ts";
import { KubeError } from "./errors.ts";
import { type PodSecurityLevel, type PodTemplate, podSecurityViolations } from "./pod-security.ts";
import { quotaRefusal } from "./resource-quota.ts";
import type { KubeObject } from "./store.ts";

/**
 * The admission plugins a real cluster runs on a new Pod, in their order: Pod Security, then
 * ResourceQuota (the last validating plugin). Each refusal is 403 `pods "<name>" is forbidden: …`.
 */
export function admitPod(api: KubeApi, pod: KubeObject): void {
  const why = podSecurityRefusal(api, pod) ?? quotaRefusalOf(api, pod);
  if (!why) return;
  throw new KubeError(403, "Forbidden", `pods "${pod.metadata.name}" is forbidden: ${why}`, {
    name: pod.metadata.name,
    kind: "pods",
  });
}

/**
 * Pod Security admission: a Pod created in a namespace labelled `pod-security.kubernetes.io/enforce`
 * must meet that level (workloads are only warned about; their pods are what gets refused).
 */
function podSecurityRefusal(api: KubeApi, pod: KubeObject): string | undefined {
  const namespace = api.store.get(api.resource("v1", "namespaces"), undefined, pod.metadata.namespace ?? "");
  const level = namespace?.metadata.labels?.["pod-security.kubernetes.io/enforce"] as PodSecurityLevel | undefined;
  if (!level || level === "privileged") return undefined;
  const version = namespace?.metadata.labels?.["pod-security.kubernetes.io/enforce-version"] ?? "latest";
  const violations = podSecurityViolations(pod as unknown as PodTemplate, level);
  if (violations.length === 0) return undefined;
  return `violates PodSecurity "${level}:${version}": ${violations.join(", ")}`;
}

function quotaRefusalOf(api: KubeApi, pod: KubeObject): string | undefined {
  const namespace = pod.metadata.namespace;
  const quotas = api.store.list(api.resource("v1", "resourcequotas"), namespace);
  if (quotas.length === 0) return undefined;
  return quotaRefusal(quotas, api.store.list(api.resource("v1", "pods"), namespace), pod);
}
