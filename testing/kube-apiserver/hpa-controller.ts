import { type KubeApi, PATCH_TYPES } from "./api.ts";
import { onNamespaceChanges, recordEvent } from "./controller-loop.ts";
import { timestamp } from "./object-shape.ts";
import { labelSelector } from "./selectors.ts";
import type { KubeObject } from "./store.ts";

/**
 * The HorizontalPodAutoscaler controller, minimally: it reads the target's scale and its pods and
 * writes `status.currentReplicas`, `desiredReplicas` and the `AbleToScale`, `ScalingActive` and
 * `ScalingLimited` conditions with kube-controller-manager's reasons and wording, and scales the target
 * into `[minReplicas, maxReplicas]`. Resource metrics come from an emulated metrics server that reports
 * every Running pod at exactly its target (so a valid metric never moves the count); what Kubernetes
 * checks before it uses one is real: a Utilization target needs a request on every container of every
 * selected pod ("missing request for cpu"). Custom and external metrics are answered as on a cluster
 * without a metrics adapter.
 */

type Json = Record<string, any>;
const MANAGER = "kube-controller-manager";
const COMPONENT = "horizontal-pod-autoscaler";

/** Kinds with a scale subresource this server serves. */
const SCALABLE: Record<string, { apiVersion: string; plural: string; group: string }> = {
  Deployment: { apiVersion: "apps/v1", plural: "deployments", group: "apps" },
  StatefulSet: { apiVersion: "apps/v1", plural: "statefulsets", group: "apps" },
  ReplicaSet: { apiVersion: "apps/v1", plural: "replicasets", group: "apps" },
};

interface Condition {
  type: "AbleToScale" | "ScalingActive" | "ScalingLimited";
  status: "True" | "False";
  reason: string;
  message: string;
}

/** A metric's replica proposal, or why none could be computed (reason + error, as the controller words them). */
type MetricResult = { ok: true; source: string } | { ok: false; reason: string; error: string };

/** autoscaling/v2 defaulting: no metrics means 80% average CPU utilisation. */
const DEFAULT_METRICS = [
  { type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } } },
];

function selectorString(selector: Json | undefined): string {
  const terms = Object.entries(selector?.matchLabels ?? {}).map(([key, value]) => `${key}=${value}`);
  for (const { key, operator, values } of selector?.matchExpressions ?? []) {
    if (operator === "In") terms.push(`${key} in (${values.join(",")})`);
    if (operator === "NotIn") terms.push(`${key} notin (${values.join(",")})`);
    if (operator === "Exists") terms.push(key);
    if (operator === "DoesNotExist") terms.push(`!${key}`);
  }
  return terms.join(",");
}

/** calculatePodRequests: every (selected) container of every pod must request the resource. */
function missingRequest(pods: readonly KubeObject[], resource: string, container?: string): string | undefined {
  for (const pod of pods) {
    const spec = (pod.spec ?? {}) as Json;
    const sidecars = (spec.initContainers ?? []).filter((c: Json) => c.restartPolicy === "Always");
    for (const c of [...(spec.containers ?? []), ...sidecars]) {
      if (container !== undefined && c.name !== container) continue;
      if (c.resources?.requests?.[resource] === undefined) {
        return `missing request for ${resource} in container ${c.name} of Pod ${pod.metadata.name}`;
      }
    }
  }
  return undefined;
}

function resourceMetric(metric: Json, pods: readonly KubeObject[], running: readonly KubeObject[]): MetricResult {
  const container = metric.type === "ContainerResource";
  const source: Json = (container ? metric.containerResource : metric.resource) ?? {};
  const name = source.name ?? "cpu";
  const reason = container ? "FailedGetContainerResourceMetric" : "FailedGetResourceMetric";
  const utilization = source.target?.type === "Utilization";
  // The controller words both target types as utilization.
  const what = `failed to get ${name} utilization`;
  if (running.length === 0) {
    return {
      ok: false,
      reason,
      error: `${what}: unable to get metrics for resource ${name}: no metrics returned from resource metrics API`,
    };
  }
  const missing = utilization ? missingRequest(pods, name, container ? source.container : undefined) : undefined;
  if (missing) return { ok: false, reason, error: `${what}: ${missing}` };
  const kind = container ? `${name} container resource` : `${name} resource`;
  return { ok: true, source: utilization ? `${kind} utilization (percentage of request)` : kind };
}

function metricResult(metric: Json, pods: readonly KubeObject[], running: readonly KubeObject[]): MetricResult {
  if (metric.type === "Resource" || metric.type === "ContainerResource") return resourceMetric(metric, pods, running);
  const external = metric.type === "External";
  const name = (external ? metric.external : metric.type === "Pods" ? metric.pods : metric.object)?.metric?.name;
  const api = external
    ? "external metrics API (external.metrics.k8s.io)"
    : "custom metrics API (custom.metrics.k8s.io)";
  return {
    ok: false,
    reason: `FailedGet${metric.type}Metric`,
    error: `unable to get metric ${name}: unable to fetch metrics from ${api}: no ${api} registered`,
  };
}

function setCondition(conditions: Json[], update: Condition, now: string): Json[] {
  const previous = conditions.find((c) => c.type === update.type);
  const lastTransitionTime = previous?.status === update.status ? previous.lastTransitionTime : now;
  return [...conditions.filter((c) => c.type !== update.type), { ...update, lastTransitionTime }];
}

/** One pass of the HPA controller over `hpa` (kube-controller-manager runs it every 15 s). */
function syncAutoscaler(api: KubeApi, hpa: KubeObject): void {
  const namespace = hpa.metadata.namespace as string;
  const spec = (hpa.spec ?? {}) as Json;
  const previous = (hpa.status ?? {}) as Json;
  const status: Json = { desiredReplicas: previous.desiredReplicas ?? 0, ...previous };
  const now = timestamp();
  let conditions: Json[] = previous.conditions ?? [];
  const set = (update: Condition) => {
    conditions = setCondition(conditions, update, now);
  };
  const ref = spec.scaleTargetRef ?? {};
  const scalable = Object.hasOwn(SCALABLE, ref.kind) ? SCALABLE[ref.kind] : undefined;
  const targetType = scalable && api.registry.find(scalable.apiVersion, scalable.plural);
  const target = targetType && api.store.get(targetType, namespace, ref.name);
  /** Warnings to record when their condition is new (the recorder would aggregate repeats). */
  const warnings: { type: Condition["type"]; reason: string; message: string }[] = [];
  if (!targetType || !target) {
    const what = scalable
      ? `${scalable.plural}.${scalable.group} "${ref.name}" not found`
      : `no matches for kind "${ref.kind}"`;
    set({
      type: "AbleToScale",
      status: "False",
      reason: "FailedGetScale",
      message: `the HPA controller was unable to get the target's current scale: ${what}`,
    });
    warnings.push({ type: "AbleToScale", reason: "FailedGetScale", message: what });
  } else {
    const current = ((target.spec as Json | undefined)?.replicas ?? 1) as number;
    const min = spec.minReplicas ?? 1;
    const max = spec.maxReplicas;
    status.currentReplicas = current;
    let desired = status.desiredReplicas as number;
    let rescaleReason = "";
    if (current === 0 && min !== 0) {
      desired = 0;
      set({
        type: "ScalingActive",
        status: "False",
        reason: "ScalingDisabled",
        message: "scaling is disabled since the replica count of the target is zero",
      });
    } else if (current > max || current < min) {
      desired = current > max ? max : min;
      rescaleReason = `Current number of replicas ${current > max ? "above Spec.MaxReplicas" : "below Spec.MinReplicas"}`;
    } else {
      const select = labelSelector(selectorString((target.spec as Json | undefined)?.selector));
      const pods = api.store
        .list(api.resource("v1", "pods"), namespace)
        .filter(
          (p) =>
            select(p) && !p.metadata.deletionTimestamp && !["Failed", "Succeeded"].includes((p.status as Json)?.phase),
        );
      const running = pods.filter((p) => (p.status as Json)?.phase === "Running");
      const results = (spec.metrics?.length ? spec.metrics : DEFAULT_METRICS).map((m: Json) =>
        metricResult(m, pods, running),
      );
      const valid = results.find((r: MetricResult) => r.ok) as Extract<MetricResult, { ok: true }> | undefined;
      const failed = results.find((r: MetricResult) => !r.ok) as Extract<MetricResult, { ok: false }> | undefined;
      if (valid) {
        desired = current;
        set({
          type: "ScalingActive",
          status: "True",
          reason: "ValidMetricFound",
          message: `the HPA was able to successfully calculate a replica count from ${valid.source}`,
        });
        set({
          type: "ScalingLimited",
          status: "False",
          reason: "DesiredWithinRange",
          message: "the desired count is within the acceptable range",
        });
      } else if (failed) {
        set({
          type: "ScalingActive",
          status: "False",
          reason: failed.reason,
          message: `the HPA was unable to compute the replica count: ${failed.error}`,
        });
        warnings.push({ type: "ScalingActive", reason: failed.reason, message: failed.error });
      }
    }
    if (rescaleReason) {
      api.patch(
        targetType,
        namespace,
        ref.name,
        PATCH_TYPES.merge,
        { spec: { replicas: desired } },
        { fieldManager: MANAGER },
      );
      status.lastScaleTime = now;
      status.currentReplicas = desired;
      set({
        type: "AbleToScale",
        status: "True",
        reason: "SucceededRescale",
        message: `the HPA controller was able to update the target scale to ${desired}`,
      });
      recordEvent(api, hpa, "Normal", "SuccessfulRescale", `New size: ${desired}; reason: ${rescaleReason}`, COMPONENT);
    } else {
      const matches = desired === current;
      set(
        matches
          ? {
              type: "AbleToScale",
              status: "True",
              reason: "ReadyForNewScale",
              message: "recommended size matches current size",
            }
          : {
              type: "AbleToScale",
              status: "True",
              reason: "SucceededGetScale",
              message: "the HPA controller was able to get the target's current scale",
            },
      );
    }
    status.desiredReplicas = desired;
  }
  status.conditions = conditions;
  if (JSON.stringify(status) === JSON.stringify(previous)) return;
  const hpaType = api.resource("autoscaling/v2", "horizontalpodautoscalers");
  api.update(
    hpaType,
    namespace,
    hpa.metadata.name,
    { ...hpa, status },
    { subresource: "status", fieldManager: MANAGER },
  );
  for (const { type, reason, message } of warnings) {
    const before = (previous.conditions ?? []).find((c: Json) => c.type === type);
    if (before?.reason !== reason || before?.status !== "False")
      recordEvent(api, hpa, "Warning", reason, message, COMPONENT);
  }
}

/** Runs the HPA controller: each change to an autoscaler, a workload or a pod re-checks its namespace. */
export function runHpaController(api: KubeApi): () => void {
  const hpas = api.resource("autoscaling/v2", "horizontalpodautoscalers");
  const kinds = [
    "autoscaling/horizontalpodautoscalers",
    "apps/deployments",
    "apps/statefulsets",
    "apps/replicasets",
    "/pods",
  ];
  return onNamespaceChanges(api, kinds, (namespace) => {
    for (const hpa of api.store.list(hpas, namespace)) syncAutoscaler(api, structuredClone(hpa));
  });
}
