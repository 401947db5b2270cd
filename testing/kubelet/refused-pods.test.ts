import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../../operator/src/build/names.ts";
import { resourcePath, resources } from "../../operator/src/kube/resources.ts";
import { eventually, startTestCluster, type TestCluster } from "./cluster.ts";

/**
 * Pods refused by admission are reported as kube-controller-manager reports them: a `ReplicaFailure`
 * condition (reason `FailedCreate`, the API server's message) on the ReplicaSet and the Deployment,
 * and a `FailedCreate` Warning Event on the ReplicaSet; for a StatefulSet, the Event only.
 */

const NS = "restricted-apps";
let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startTestCluster({ "example/app:1": () => "simulated" }, "redis://127.0.0.1:1");
  await cluster.kube.create("/api/v1/namespaces", {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: NS, labels: { "pod-security.kubernetes.io/enforce": "restricted" } },
  });
});
afterAll(() => cluster?.close());

const labels = { app: "web", [MANAGED_BY_LABEL]: MANAGED_BY };
/** No securityContext at all: the `restricted` level refuses it. */
const template = { metadata: { labels }, spec: { containers: [{ name: "web", image: "example/app:1" }] } };
const events = (kind: string) =>
  cluster.api
    .list("v1", "events", NS)
    .filter((e: any) => e.involvedObject?.kind === kind && e.reason === "FailedCreate")
    .map((e: any) => e.message as string);

describe("pods refused by Pod Security admission", () => {
  it("a Deployment's: ReplicaFailure FailedCreate with the admission message, and one Event", async () => {
    await cluster.kube.create(resourcePath(resources.deployment, NS), {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: NS, labels },
      spec: { replicas: 1, selector: { matchLabels: labels }, template },
    });
    const failure = await eventually(() => {
      const deployment = cluster.api.get("apps/v1", "deployments", NS, "web") as any;
      return deployment?.status?.conditions?.find((c: any) => c.type === "ReplicaFailure");
    });
    expect(failure).toMatchObject({ status: "True", reason: "FailedCreate" });
    expect(failure.message).toMatch(
      /^pods "web-[a-f0-9]+-[a-f0-9]+" is forbidden: violates PodSecurity "restricted:latest": /,
    );
    expect(failure.message).toContain("privilege escalation");
    const [replicaSet] = cluster.api.list("apps/v1", "replicasets", NS) as any[];
    expect(replicaSet.status.conditions).toEqual([failure]);
    // Creates keep failing every second; the condition and its one Event stay as first reported.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(events("ReplicaSet")).toEqual([`Error creating: ${failure.message}`]);
    expect(cluster.api.list("v1", "pods", NS)).toEqual([]);
  });

  it("a StatefulSet's: a FailedCreate Event in the StatefulSet controller's words, no replica", async () => {
    await cluster.kube.create(resourcePath(resources.statefulSet, NS), {
      apiVersion: "apps/v1",
      kind: "StatefulSet",
      metadata: { name: "db", namespace: NS, labels },
      spec: { serviceName: "db", replicas: 1, selector: { matchLabels: labels }, template },
    });
    const [message] = await eventually(() => (events("StatefulSet").length > 0 ? events("StatefulSet") : undefined));
    expect(message).toMatch(
      /^create Pod db-0 in StatefulSet db failed error: pods "db-0" is forbidden: violates PodSecurity "restricted:latest": /,
    );
    const sts = await eventually(() => {
      const found = cluster.api.get("apps/v1", "statefulsets", NS, "db") as any;
      return found?.status?.observedGeneration === 1 && found;
    });
    expect(sts.status).toMatchObject({ replicas: 0, readyReplicas: 0 });
  });
});
