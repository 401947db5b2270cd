import { randomUUID } from "node:crypto";
import type { AgentDeployment, AgentRevision } from "@agentplane/crds";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  crashingImage,
  createAgentDeployment,
  createAgentRevision,
  eventually,
  startTestCluster,
  type TestCluster,
} from "../../testing/kubelet/cluster.ts";
import { testRedisUrl } from "../../testing/redis.ts";
import { settingsFromEnv } from "./config.ts";
import type { KubeObject } from "./kube/client.ts";
import { resourcePath, resources } from "./kube/resources.ts";
import { type RunningOperator, startOperator } from "./operator.ts";

const NS = "agents";
const images = {
  "example/agent:1": () => "simulated" as const,
  "example/agent:2": () => "simulated" as const,
  "example/crash:1": crashingImage(3),
  // Runs, never answers /ok: the rollout stalls until the progress deadline.
  "example/stuck:1": () => ({ command: process.execPath, args: ["-e", "setInterval(() => {}, 1000)"] }),
};

let cluster: TestCluster;
let operator: RunningOperator;

function operatorSettings(extra: Record<string, string> = {}) {
  return settingsFromEnv({
    HEALTH_PORT: "0",
    HEALTH_HOST: "127.0.0.1",
    OPERATOR_NAMESPACE: NS,
    POLL_SECONDS: "1",
    AGENT_SERVICE_TYPE: "LoadBalancer",
    LEASE_DURATION_SECONDS: "2",
    LEASE_RENEW_DEADLINE_SECONDS: "1.5",
    LEASE_RETRY_PERIOD_SECONDS: "0.3",
    PROGRESS_DEADLINE_SECONDS: "10",
    ...extra,
  });
}

const silent = pino({ level: "silent" });
const agdPath = (id: string) => resourcePath(resources.agentDeployment, NS, id);
const getAgd = (id: string) => cluster.kube.get<AgentDeployment>(agdPath(id));
const getRevision = (id: string) => cluster.kube.get<AgentRevision>(resourcePath(resources.agentRevision, NS, id));
const revisionStatus = async (id: string) => (await getRevision(id))?.status?.revisionStatus;
const stored = (apiVersion: string, plural: string, name: string) => cluster.api.get(apiVersion, plural, NS, name);
async function reconcileCount(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${operator.healthPort}/metrics`)).text();
  const counts = [...text.matchAll(/^agentplane_operator_reconciles_total\{[^}]*\} (\d+)/gm)];
  return counts.reduce((sum, match) => sum + Number(match[1]), 0);
}

beforeAll(async () => {
  cluster = await startTestCluster(images, testRedisUrl());
  await cluster.createNamespace(NS);
  await cluster.kube.create(resourcePath(resources.secret, NS), {
    apiVersion: "v1",
    kind: "Secret",
    // Not any one deployment's (`<id>-…`): the pod policy lets deployments use it once shared.
    metadata: { name: "redis", namespace: NS, annotations: { "agentplane.dev/shared-with-workspaces": "*" } },
    data: { url: Buffer.from(testRedisUrl()).toString("base64") },
  });
  operator = await startOperator(cluster.connection, operatorSettings(), silent);
  await operator.synced;
});

afterAll(async () => {
  await operator?.close();
  await cluster?.close();
});

describe("operator against the Kubernetes API test server", () => {
  const id = randomUUID();
  const revisionId = randomUUID();
  const name = `agent-${id}`;

  it("applies the children, takes the finalizer and reports the revision DEPLOYED", async () => {
    await createAgentDeployment(cluster.kube, {
      namespace: NS,
      id,
      revisionId,
      image: "example/agent:1",
      resources: { minScale: 1, maxScale: 3, cpu: 0.5, memoryMb: 256 },
    });
    expect(await eventually(() => revisionStatus(revisionId).then((s) => s === "DEPLOYED"), 20_000, "DEPLOYED")).toBe(
      true,
    );
    const agd = (await getAgd(id)) as AgentDeployment;
    expect(agd.metadata.finalizers).toContain("agentplane.dev/cleanup");
    expect(agd.status).toMatchObject({
      observedGeneration: agd.metadata.generation,
      latestCreatedRevision: revisionId,
      latestReadyRevision: revisionId,
      deploymentStatus: "READY",
      readyReplicas: 1,
    });
    expect(agd.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    expect(agd.status?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // Every container requests CPU, so Kubernetes' HPA controller (emulated) can compute a count.
    const scaling = await eventually(
      () => getAgd(id).then((a) => a?.status?.conditions?.find((c) => c.type === "Autoscaling")),
      20_000,
      "the Autoscaling condition",
    );
    expect(scaling).toMatchObject({ status: "True", reason: "ValidMetricFound" });

    const deployment = stored("apps/v1", "deployments", name) as any;
    expect(deployment.spec.template.metadata.labels["agentplane.dev/revision-id"]).toBe(revisionId);
    expect(deployment.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: "AgentDeployment",
      uid: agd.metadata.uid,
      controller: true,
    });
    for (const [apiVersion, plural, child] of [
      ["v1", "services", name],
      ["autoscaling/v2", "horizontalpodautoscalers", name],
      ["apps/v1", "statefulsets", `${name}-redis`],
      ["v1", "services", `${name}-redis`],
    ] as const) {
      expect(stored(apiVersion, plural, child), `${plural}/${child}`).toBeDefined();
    }
    // Kubernetes Events on the AgentDeployment for the notable steps.
    const events = await eventually(() => {
      const mine = cluster.api
        .list("events.k8s.io/v1", "events", NS)
        .filter((e) => (e as { regarding?: { uid?: string } }).regarding?.uid === agd.metadata.uid);
      return mine.length >= 5 ? mine : undefined;
    });
    const reasons = events.map((e) => (e as { reason?: string }).reason);
    expect(reasons).toEqual(expect.arrayContaining(["Created", "RolloutComplete"]));
  });

  it("rewrites nothing when nothing changed", async () => {
    const versions = () =>
      [
        stored("apps/v1", "deployments", name),
        stored("v1", "services", name),
        stored("apps/v1", "statefulsets", `${name}-redis`),
        stored("autoscaling/v2", "horizontalpodautoscalers", name),
        stored("agentplane.dev/v1alpha1", "agentdeployments", id),
        stored("agentplane.dev/v1alpha1", "agentrevisions", revisionId),
      ].map((o) => o?.metadata?.resourceVersion);
    // Nothing queued or running, so the next reconcile counted is one that follows the change below.
    await operator.idle();
    const before = versions();
    const reconcilesBefore = await reconcileCount();
    // An unrelated metadata change makes the operator reconcile the deployment again.
    const touched = await cluster.kube.mergePatch<KubeObject>(
      agdPath(id),
      { metadata: { annotations: { touched: "yes" } } },
      "test",
    );
    await eventually(async () => (await reconcileCount()) > reconcilesBefore, 10_000, "a reconcile");
    // Its writes (there should be none) are done once the queue is idle again.
    await operator.idle();
    const after = versions();
    expect(after.slice(0, 4)).toEqual(before.slice(0, 4));
    expect(after[4]).toBe(touched.metadata?.resourceVersion);
    expect(after[5]).toBe(before[5]);
  });

  it("recreates a child Deployment deleted by hand", async () => {
    const uid = stored("apps/v1", "deployments", name)?.metadata?.uid;
    await cluster.kube.delete(resourcePath(resources.deployment, NS, name));
    const recreated = await eventually(() => {
      const d = stored("apps/v1", "deployments", name);
      return d && d.metadata?.uid !== uid ? d : undefined;
    });
    expect(recreated.metadata?.ownerReferences?.[0]?.kind).toBe("AgentDeployment");
  });

  it("marks a waiting revision SKIPPED and serves the newest one", async () => {
    const agd = (await getAgd(id)) as AgentDeployment;
    const waiting = randomUUID();
    const newest = randomUUID();
    const first = await createAgentRevision(cluster.kube, agd, waiting, { image: "example/agent:2" });
    // creationTimestamp has whole-second precision and only a revision created in an earlier second
    // counts as superseded: wait for the API server's clock (this process's) to reach the next second.
    const createdAt = Date.parse(first.metadata.creationTimestamp as string);
    await eventually(() => Date.now() >= createdAt + 1000, 2_000, "the next second");
    await createAgentRevision(cluster.kube, agd, newest, { image: "example/agent:2" }, "CREATING");
    await cluster.kube.mergePatch(
      agdPath(id),
      { spec: { revisionName: newest, template: { image: "example/agent:2" } } },
      "test",
    );
    await eventually(() => revisionStatus(newest).then((s) => s === "DEPLOYED"), 20_000, "newest DEPLOYED");
    expect(await revisionStatus(waiting)).toBe("SKIPPED");
    expect(await revisionStatus(revisionId)).toBe("DEPLOYED");
    const status = (await getAgd(id))?.status;
    expect(status).toMatchObject({ latestCreatedRevision: newest, latestReadyRevision: newest });
  });

  it("deletes everything and releases the finalizer", async () => {
    const seen: unknown[] = [];
    const unsubscribe = cluster.api.api.store.subscribe((event) => {
      if (event.object.metadata.name === id) seen.push((event.object as AgentDeployment).status?.deploymentStatus);
    });
    await cluster.kube.delete(agdPath(id));
    await eventually(() => getAgd(id).then((agd) => agd === undefined));
    unsubscribe();
    // The control plane sees AWAITING_DELETE until the children are gone and the finalizer released.
    expect(seen).toContain("AWAITING_DELETE");
    await eventually(() =>
      [
        cluster.api.list("apps/v1", "deployments", NS),
        cluster.api.list("v1", "services", NS),
        cluster.api.list("apps/v1", "statefulsets", NS),
        cluster.api.list("autoscaling/v2", "horizontalpodautoscalers", NS),
        cluster.api.list("agentplane.dev/v1alpha1", "agentrevisions", NS),
      ].every((items) =>
        items.every(
          (o) =>
            o.metadata?.labels?.["app.kubernetes.io/instance"] !== id &&
            (o.spec as { deploymentId?: string }).deploymentId !== id,
        ),
      ),
    );
  });
});

describe("failures", () => {
  it.each([
    ["a crashing container", "example/crash:1", "CrashLoopBackOff"],
    ["an image that cannot be pulled", "example/missing:1", "ImagePullBackOff"],
    ["a pod that never becomes ready", "example/stuck:1", "ProgressDeadlineExceeded"],
  ])("%s -> DEPLOY_FAILED with the reason", async (_what, image, reason) => {
    const id = randomUUID();
    const revisionId = randomUUID();
    await createAgentDeployment(cluster.kube, {
      namespace: NS,
      id,
      revisionId,
      image,
      redis: { externalUrlSecretRef: { name: "redis", key: "url" } },
    });
    await eventually(() => revisionStatus(revisionId).then((s) => s === "DEPLOY_FAILED"), 20_000, "DEPLOY_FAILED");
    const revision = (await getRevision(revisionId)) as AgentRevision;
    expect(revision.status?.message).toContain(reason);
    const agd = (await getAgd(id)) as AgentDeployment;
    expect(agd.status?.conditions?.find((c) => c.type === "Ready")).toMatchObject({
      status: "False",
      reason: "RevisionFailed",
    });
    expect(agd.status?.conditions?.find((c) => c.type === "Degraded")).toMatchObject({ status: "True", reason });
    expect(stored("apps/v1", "statefulsets", `agent-${id}-redis`)).toBeUndefined();
    await cluster.kube.delete(agdPath(id));
    await eventually(() => getAgd(id).then((a) => a === undefined));
  });
});

describe("objects the API server refuses", () => {
  it("a CPU limit below the request (written past the control plane) -> DEPLOY_FAILED with the server's message, a Warning Event and a condition", async () => {
    const id = randomUUID();
    const revisionId = randomUUID();
    await createAgentDeployment(cluster.kube, {
      namespace: NS,
      id,
      revisionId,
      image: "example/agent:1",
      resources: { cpu: 2, cpuLimit: 0.5 },
      redis: { externalUrlSecretRef: { name: "redis", key: "url" } },
    });
    await eventually(() => revisionStatus(revisionId).then((s) => s === "DEPLOY_FAILED"), 20_000, "DEPLOY_FAILED");
    const refusal = "must be less than or equal to cpu limit of 500m";
    const revision = (await getRevision(revisionId)) as AgentRevision;
    expect(revision.status?.message).toContain("ObjectRejected: Kubernetes refused Deployment");
    expect(revision.status?.message).toContain(refusal);
    const agd = (await getAgd(id)) as AgentDeployment;
    expect(agd.status?.conditions?.find((c) => c.type === "Ready")).toMatchObject({
      status: "False",
      reason: "RevisionFailed",
    });
    const degraded = agd.status?.conditions?.find((c) => c.type === "Degraded");
    expect(degraded).toMatchObject({ status: "True", reason: "ObjectRejected" });
    expect(degraded?.message).toContain(refusal);
    const warnings = await eventually(() => {
      const found = cluster.api
        .list("events.k8s.io/v1", "events", NS)
        .filter(
          (e: any) => e.regarding?.uid === agd.metadata.uid && e.type === "Warning" && e.reason === "ObjectRejected",
        );
      return found.length > 0 ? found : undefined;
    });
    expect((warnings[0] as { note?: string }).note).toContain(refusal);
    await cluster.kube.delete(agdPath(id));
    await eventually(() => getAgd(id).then((a) => a === undefined));
  });
});

describe("health and metrics", () => {
  it("serves /healthz, /readyz and /metrics", async () => {
    const base = `http://127.0.0.1:${operator.healthPort}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/agentplane_operator_reconciles_total\{result="done"\} \d+/);
    expect(metrics).toContain("agentplane_operator_leader 1");
  });
});
