import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, startWithClients } from "./clients.ts";
import type { KubeObject } from "./store.ts";

/**
 * The HPA controller emulation: why an autoscaler cannot scale, in kube-controller-manager's
 * conditions and words, and scaling into [minReplicas, maxReplicas].
 */

let env: Awaited<ReturnType<typeof startWithClients>>;
const ns = "scaling";
type Json = any;

beforeAll(async () => {
  env = await startWithClients();
  await env.core.createNamespace({ body: { metadata: { name: ns } } });
});
afterAll(() => env.kube.close());

const resource = (apiVersion: string, plural: string) => env.kube.api.resource(apiVersion, plural);

/** A Deployment and its Running pods, as the Deployment controller and kubelet would leave them. */
function workload(name: string, replicas: number, requests?: Record<string, string>, phase = "Running"): void {
  const labels = { app: name };
  const container = { name: "server", image: "agent", ...(requests ? { resources: { requests } } : {}) };
  const template = {
    metadata: { labels },
    spec: {
      containers: [container, { name: "proxy", image: "envoy", ...(requests ? { resources: { requests } } : {}) }],
    },
  };
  env.kube.api.create(resource("apps/v1", "deployments"), ns, {
    metadata: { name },
    spec: { replicas, selector: { matchLabels: labels }, template },
  });
  for (let i = 0; i < replicas; i++) {
    const pod = env.kube.api.create(resource("v1", "pods"), ns, {
      metadata: { name: `${name}-${i}`, labels },
      spec: template.spec,
    });
    env.kube.api.update(
      resource("v1", "pods"),
      ns,
      pod.metadata.name,
      { ...pod, status: { phase } },
      { subresource: "status" },
    );
  }
}

function autoscaler(name: string, target: string, spec: Json = {}): void {
  env.kube.api.create(resource("autoscaling/v2", "horizontalpodautoscalers"), ns, {
    metadata: { name },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: target },
      minReplicas: 1,
      maxReplicas: 5,
      metrics: [
        { type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 75 } } },
      ],
      ...spec,
    },
  });
}

/** `Type=Status Reason: message` of each condition, once the controller has written them. */
async function conditions(name: string, type = "ScalingActive"): Promise<{ status: Json; lines: string[] }> {
  const hpa = await eventually(
    () => env.kube.get("autoscaling/v2", "horizontalpodautoscalers", ns, name) as KubeObject & { status?: Json },
    (h) => h.status?.conditions?.some((c: Json) => c.type === type),
  );
  const lines = hpa.status.conditions.map((c: Json) => `${c.type}=${c.status} ${c.reason}: ${c.message}`);
  return { status: hpa.status, lines };
}

const warnings = (name: string) =>
  env.kube
    .list("v1", "events", ns)
    .filter((e: Json) => e.involvedObject?.name === name && e.involvedObject?.kind === "HorizontalPodAutoscaler")
    .map((e: Json) => `${e.type} ${e.reason} ${e.message}`);

describe("HorizontalPodAutoscaler status", () => {
  it("a target container without a CPU request: ScalingActive=False FailedGetResourceMetric, missing request for cpu", async () => {
    workload("no-request", 2);
    autoscaler("no-request", "no-request");
    const { status, lines } = await conditions("no-request");
    expect(lines).toEqual([
      "ScalingActive=False FailedGetResourceMetric: the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu in container server of Pod no-request-0",
      "AbleToScale=True SucceededGetScale: the HPA controller was able to get the target's current scale",
    ]);
    expect(status).toMatchObject({ currentReplicas: 2, desiredReplicas: 0 });
    await eventually(
      () => warnings("no-request"),
      (w) => w.length > 0,
    );
    expect(warnings("no-request")).toEqual([
      "Warning FailedGetResourceMetric failed to get cpu utilization: missing request for cpu in container server of Pod no-request-0",
    ]);
  });

  it("every container requests CPU: ScalingActive=True ValidMetricFound, desired = current", async () => {
    workload("requests", 2, { cpu: "250m" });
    autoscaler("requests", "requests");
    const { status, lines } = await conditions("requests");
    expect(lines).toEqual([
      "ScalingActive=True ValidMetricFound: the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)",
      "ScalingLimited=False DesiredWithinRange: the desired count is within the acceptable range",
      "AbleToScale=True ReadyForNewScale: recommended size matches current size",
    ]);
    expect(status).toMatchObject({ currentReplicas: 2, desiredReplicas: 2 });
    expect(warnings("requests")).toEqual([]);
  });

  it("no running pod yet: no metrics returned from the resource metrics API", async () => {
    workload("pending", 1, { cpu: "250m" }, "Pending");
    autoscaler("pending", "pending");
    expect((await conditions("pending")).lines[0]).toBe(
      "ScalingActive=False FailedGetResourceMetric: the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API",
    );
  });

  it("a custom metric on a cluster without a metrics adapter: FailedGetPodsMetric", async () => {
    workload("custom", 1, { cpu: "250m" });
    autoscaler("custom", "custom", {
      metrics: [
        {
          type: "Pods",
          pods: { metric: { name: "queue_depth" }, target: { type: "AverageValue", averageValue: "5" } },
        },
      ],
    });
    expect((await conditions("custom")).lines[0]).toContain(
      "ScalingActive=False FailedGetPodsMetric: the HPA was unable to compute the replica count: unable to get metric queue_depth",
    );
  });

  it("scales a target below minReplicas up to it", async () => {
    workload("small", 1, { cpu: "250m" });
    autoscaler("small", "small", { minReplicas: 3 });
    const deployment = await eventually(
      () => env.kube.get("apps/v1", "deployments", ns, "small") as Json,
      (d) => d.spec.replicas === 3,
    );
    expect(deployment.metadata.managedFields.map((f: Json) => f.manager)).toContain("kube-controller-manager");
    // The rescale is recorded; the next pass finds the target within range again.
    const { status } = await conditions("small", "ScalingActive");
    expect(status.lastScaleTime).toBeDefined();
    expect(status).toMatchObject({ currentReplicas: 3, desiredReplicas: 3 });
    expect(
      env.kube
        .list("v1", "events", ns)
        .some(
          (e: Json) =>
            e.reason === "SuccessfulRescale" &&
            e.message === "New size: 3; reason: Current number of replicas below Spec.MinReplicas",
        ),
    ).toBe(true);
  });

  it("a missing target: AbleToScale=False FailedGetScale", async () => {
    autoscaler("orphan", "nowhere");
    expect((await conditions("orphan", "AbleToScale")).lines).toEqual([
      'AbleToScale=False FailedGetScale: the HPA controller was unable to get the target\'s current scale: deployments.apps "nowhere" not found',
    ]);
  });
});
