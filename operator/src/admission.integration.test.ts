import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentDeployment, AgentRevision } from "@agentplane/crds";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createAgentDeployment,
  eventually,
  startTestCluster,
  type TestCluster,
} from "../../testing/kubelet/cluster.ts";
import { testRedisUrl } from "../../testing/redis.ts";
import { settingsFromEnv } from "./config.ts";
import { resourcePath, resources } from "./kube/resources.ts";
import { type RunningOperator, startOperator } from "./operator.ts";

/**
 * Pods that admission refuses after the operator's objects were accepted: a namespace's ResourceQuota
 * refusing the managed Redis pod or the agent pods. On a real cluster only the controllers' Events
 * and conditions say so; the revision must fail with the quota's own words, not a timeout.
 */

const NS = "quota-bound";
const readyFile = join(mkdtempSync(join(tmpdir(), "admission-")), "redis-up");
/**
 * An agent server as it behaves without its Redis: alive (`/ok`), but not ready (`/ok?check_db=1`)
 * until the test says Redis is up (the test kubelet points no process at a managed Redis).
 */
const WAITING_FOR_REDIS = `const { existsSync } = require("node:fs");
require("node:http").createServer((req, res) => {
  res.statusCode = !req.url.includes("check_db") || existsSync(process.env.READY_FILE) ? 200 : 503;
  res.end();
}).listen(Number(process.env.PORT), "127.0.0.1");`;
const images = {
  "example/waiting:1": () => ({
    command: process.execPath,
    args: ["-e", WAITING_FOR_REDIS],
    env: { READY_FILE: readyFile },
  }),
};
const quotas = { apiVersion: "v1", kind: "ResourceQuota", plural: "resourcequotas" };

/** Every container must state a CPU limit: the managed Redis has none on purpose (no throttling). */
function createQuota() {
  return cluster.kube.create(resourcePath(quotas, NS), {
    apiVersion: "v1",
    kind: "ResourceQuota",
    metadata: { name: "compute", namespace: NS },
    spec: { hard: { "limits.cpu": "2", "requests.memory": "4Gi" } },
  });
}

let cluster: TestCluster;
let operator: RunningOperator;

beforeAll(async () => {
  cluster = await startTestCluster(images, testRedisUrl());
  await cluster.createNamespace(NS);
  await createQuota();
  const settings = settingsFromEnv({
    HEALTH_PORT: "0",
    HEALTH_HOST: "127.0.0.1",
    OPERATOR_NAMESPACE: NS,
    POLL_SECONDS: "1",
    LEADER_ELECTION: "false",
    PROGRESS_DEADLINE_SECONDS: "600",
  });
  operator = await startOperator(cluster.connection, settings, pino({ level: "silent" }));
  await operator.synced;
});

afterAll(async () => {
  await operator?.close();
  await cluster?.close();
});

const getRevision = (id: string) => cluster.kube.get<AgentRevision>(resourcePath(resources.agentRevision, NS, id));
const getAgd = (id: string) => cluster.kube.get<AgentDeployment>(resourcePath(resources.agentDeployment, NS, id));

async function failedRevision(revisionId: string): Promise<AgentRevision> {
  return eventually(
    () => getRevision(revisionId).then((r) => r?.status?.revisionStatus === "DEPLOY_FAILED" && r),
    20_000,
    "DEPLOY_FAILED",
  );
}

describe("pods a ResourceQuota refuses", () => {
  it("the managed Redis pod: the revision fails at once with the quota's message, and is DEPLOYED once the quota goes", async () => {
    const id = randomUUID();
    const revisionId = randomUUID();
    await createAgentDeployment(cluster.kube, {
      namespace: NS,
      id,
      revisionId,
      image: "example/waiting:1",
      resources: { cpu: 0.25, cpuLimit: 0.5, memoryMb: 256 },
    });
    const refusal = `pods "agent-${id}-redis-0" is forbidden: failed quota: compute: must specify limits.cpu for: redis`;
    const revision = await failedRevision(revisionId);
    expect(revision.status?.message).toBe(
      `FailedCreate: managed Redis create Pod agent-${id}-redis-0 in StatefulSet agent-${id}-redis failed error: ${refusal}`,
    );
    const agd = (await getAgd(id)) as AgentDeployment;
    expect(agd.status?.deploymentStatus).toBe("AWAITING_DATABASE");
    expect(agd.status?.conditions?.find((c) => c.type === "Degraded")).toMatchObject({
      status: "True",
      reason: "FailedCreate",
    });
    // The agent pods themselves were admitted (they state their CPU limit).
    expect(
      cluster.api
        .list("v1", "pods", NS)
        .some((p) => p.metadata.name.startsWith(`agent-${id}-`) && !p.metadata.name.includes("redis")),
    ).toBe(true);

    // The administrator lifts the quota: the StatefulSet controller's retry creates the pod, Redis
    // comes up, the agent servers become ready and the failed revision is rolled out after all.
    await cluster.kube.delete(resourcePath(quotas, NS, "compute"));
    await eventually(
      () => (cluster.api.get("apps/v1", "statefulsets", NS, `agent-${id}-redis`) as any)?.status?.readyReplicas === 1,
      20_000,
      "the managed Redis",
    );
    writeFileSync(readyFile, "");
    await eventually(
      () => getRevision(revisionId).then((r) => r?.status?.revisionStatus === "DEPLOYED"),
      20_000,
      "DEPLOYED once the quota is gone",
    );
    await eventually(
      () => getAgd(id).then((a) => a?.status?.conditions?.find((c) => c.type === "Degraded")?.status === "False"),
      20_000,
      "Degraded=False",
    );
    await createQuota();
    await cluster.kube.delete(resourcePath(resources.agentDeployment, NS, id));
    await eventually(() => getAgd(id).then((a) => a === undefined));
  });

  it("the agent pods: the revision fails with the Deployment's ReplicaFailure message", async () => {
    const id = randomUUID();
    const revisionId = randomUUID();
    await createAgentDeployment(cluster.kube, {
      namespace: NS,
      id,
      revisionId,
      image: "example/waiting:1",
      // No CPU limit on the agent server: its pods are refused; an external Redis needs no pod.
      resources: { cpu: 0.25, memoryMb: 256 },
      redis: { externalUrlSecretRef: { name: `${id}-redis-url`, key: "url" } },
    });
    const revision = await failedRevision(revisionId);
    expect(revision.status?.message).toMatch(
      new RegExp(
        `^FailedCreate: Deployment agent-${id} cannot create pods: pods "agent-${id}-[a-z0-9-]+" is forbidden: failed quota: compute: must specify limits\\.cpu for: agent-server$`,
      ),
    );
    const events = cluster.api
      .list("v1", "events", NS)
      .filter((e: any) => e.involvedObject?.kind === "ReplicaSet" && e.reason === "FailedCreate");
    expect(events.length).toBe(1);
    expect((events[0] as { message?: string }).message).toMatch(
      /^Error creating: pods ".*" is forbidden: failed quota/,
    );
    await cluster.kube.delete(resourcePath(resources.agentDeployment, NS, id));
    await eventually(() => getAgd(id).then((a) => a === undefined));
  });
});
