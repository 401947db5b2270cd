import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import type { AgentRevision } from "@agentplane/crds";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createAgentDeployment,
  eventually,
  startTestCluster,
  type TestCluster,
} from "../../testing/kubelet/cluster.ts";
import { testRedisUrl } from "../../testing/redis.ts";
import { resourcePath, resources } from "./kube/resources.ts";

const NS = "restart";
const operatorMain = fileURLToPath(new URL("./main.ts", import.meta.url));
let cluster: TestCluster;
const processes: ChildProcess[] = [];

/** The operator as its own process (so it can be SIGKILLed), with a short leader lease. */
function spawnOperator(podName: string): ChildProcess {
  const child = spawn(process.execPath, ["--conditions=source", operatorMain], {
    env: {
      ...process.env,
      KUBECONFIG: cluster.api.kubeconfigPath,
      POD_NAME: podName,
      OPERATOR_NAMESPACE: NS,
      HEALTH_PORT: "0",
      HEALTH_HOST: "127.0.0.1",
      POLL_SECONDS: "1",
      LEASE_DURATION_SECONDS: "2",
      LEASE_RENEW_DEADLINE_SECONDS: "1.5",
      LEASE_RETRY_PERIOD_SECONDS: "0.3",
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  processes.push(child);
  return child;
}

const holder = () =>
  (
    cluster.api.get("coordination.k8s.io/v1", "leases", NS, "agentplane-operator") as {
      spec?: { holderIdentity?: string };
    }
  )?.spec?.holderIdentity;

beforeAll(async () => {
  cluster = await startTestCluster({ "example/agent:1": () => "simulated" }, testRedisUrl());
  await cluster.createNamespace(NS);
});

afterAll(async () => {
  for (const child of processes) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await cluster?.close();
});

describe("operator replicas with leader election", () => {
  it("converges after the leader is killed mid-reconcile and restarted", async () => {
    const replicas = { "operator-a": spawnOperator("operator-a"), "operator-b": spawnOperator("operator-b") };
    const leader = await eventually(() => holder(), 20_000, "a leader");
    const leaderName = leader.startsWith("operator-a") ? "operator-a" : "operator-b";
    const id = randomUUID();
    const revisionId = randomUUID();
    let killedAtRevisionStatus: string | undefined;
    // Kill the leader the moment its first child write lands: the Deployment exists, nothing else is done.
    const unsubscribe = cluster.api.api.store.subscribe((event) => {
      if (
        event.type === "ADDED" &&
        event.resource.plural === "deployments" &&
        event.object.metadata.name === `agent-${id}`
      ) {
        replicas[leaderName].kill("SIGKILL");
        const revision = cluster.api.get("agentplane.dev/v1alpha1", "agentrevisions", NS, revisionId) as AgentRevision;
        killedAtRevisionStatus = revision?.status?.revisionStatus;
      }
    });
    await createAgentDeployment(cluster.kube, { namespace: NS, id, revisionId, image: "example/agent:1" });
    await eventually(() => replicas[leaderName].signalCode === "SIGKILL", 20_000, "the leader to be killed");
    unsubscribe();
    expect(killedAtRevisionStatus).not.toBe("DEPLOYED");
    spawnOperator(leaderName);

    const status = await eventually(
      async () => {
        const revision = await cluster.kube.get<AgentRevision>(resourcePath(resources.agentRevision, NS, revisionId));
        return revision?.status?.revisionStatus === "DEPLOYED" ? revision.status : undefined;
      },
      30_000,
      "DEPLOYED after the takeover",
    );
    expect(status.readyReplicas).toBe(1);
    expect(holder()).not.toBe(leader);
    expect(cluster.api.get("v1", "services", NS, `agent-${id}`)).toBeDefined();
    expect(cluster.api.list("apps/v1", "deployments", NS)).toHaveLength(1);
    const agd = cluster.api.get("agentplane.dev/v1alpha1", "agentdeployments", NS, id);
    expect(agd?.metadata.finalizers).toEqual(["agentplane.dev/cleanup"]);
  });
});
