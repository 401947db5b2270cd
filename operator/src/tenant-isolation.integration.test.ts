import { type AgentDeployment, type AgentRevision, API_VERSION, type Condition } from "@agentplane/crds";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restrictedViolations } from "../../testing/kube-apiserver/pod-security.ts";
import { eventually, startTestCluster, type TestCluster } from "../../testing/kubelet/cluster.ts";
import { testRedisUrl } from "../../testing/redis.ts";
import { settingsFromEnv } from "./config.ts";
import { resourcePath, resources } from "./kube/resources.ts";
import { type RunningOperator, startOperator } from "./operator.ts";
import { ATTACKS, type Attack, OTHER_SECRET, OWN_SECRET } from "./testing/attacks.ts";
import { DEPLOYMENT_ID } from "./testing/fixtures.ts";

/**
 * Custom resources written straight to the API (as kubectl would, past the control plane's
 * validation) carrying each attack of issue #15: the operator renders nothing from them, and says why
 * on the revision, the deployment and in a Warning Event. Each attack gets its own namespace, where
 * another deployment's Secret really exists.
 */

type Json = any;
const images = { "example/agent:1": () => "simulated" as const };

let cluster: TestCluster;
let operator: RunningOperator;

async function secret(namespace: string, name: string, data: Record<string, string>, annotations = {}) {
  await cluster.kube.create(resourcePath(resources.secret, namespace), {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace, annotations },
    stringData: data,
  });
}

/** Writes the AgentDeployment and its revision as the attacker would, with kubectl. */
async function writeDirectly(namespace: string, attack: Omit<Attack, "field">, revisionId: string) {
  const template = {
    image: "example/agent:1",
    secretName: OWN_SECRET,
    ...attack.template,
    ...(attack.resources ? { resources: attack.resources } : {}),
  };
  const agd = await cluster.kube.create<AgentDeployment>(resourcePath(resources.agentDeployment, namespace), {
    apiVersion: API_VERSION,
    kind: "AgentDeployment",
    metadata: { name: DEPLOYMENT_ID, namespace },
    spec: {
      displayName: "attacker",
      tenantId: "tenant-1",
      source: "external_docker",
      revisionName: revisionId,
      template,
      ...attack.deployment,
    },
  });
  await cluster.kube.create(resourcePath(resources.agentRevision, namespace), {
    apiVersion: API_VERSION,
    kind: "AgentRevision",
    metadata: {
      name: revisionId,
      namespace,
      labels: { "agentplane.dev/deployment-id": DEPLOYMENT_ID },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: "AgentDeployment",
          name: DEPLOYMENT_ID,
          uid: agd.metadata.uid,
          controller: true,
        },
      ],
    },
    spec: {
      deploymentId: DEPLOYMENT_ID,
      source: "external_docker",
      sourceRevisionConfig: { image_uri: "example/agent:1" },
      template,
    },
  });
}

const attacks = Object.entries(ATTACKS).map(([name, attack], i) => ({ name, attack, namespace: `attack-${i}` }));

beforeAll(async () => {
  cluster = await startTestCluster(images, testRedisUrl());
  for (const { namespace } of attacks) {
    await cluster.createNamespace(namespace);
    await secret(namespace, OTHER_SECRET, { OPENAI_API_KEY: "the other tenant's key" });
    await secret(namespace, OWN_SECRET, { k: "v" });
  }
  await cluster.createNamespace("shared");
  const settings = settingsFromEnv({
    HEALTH_PORT: "0",
    HEALTH_HOST: "127.0.0.1",
    LEADER_ELECTION: "false",
    POLL_SECONDS: "1",
  });
  operator = await startOperator(cluster.connection, settings, pino({ level: "silent" }));
  await operator.synced;
}, 60_000);

afterAll(async () => {
  await operator?.close();
  await cluster?.close();
});

describe("custom resources written past the control plane", () => {
  it(`${attacks.length} attacks: nothing is rendered, and the revision, the deployment and an Event name the field`, async () => {
    await Promise.all(attacks.map(({ namespace, attack }) => writeDirectly(namespace, attack, "rev-1")));
    for (const { name, attack, namespace } of attacks) {
      const kind = attack.deployment ? "AgentDeployment" : "AgentRevision";
      const field = `${kind} ${attack.field}`;
      const revision = await eventually(
        async () => {
          const rev = await cluster.kube.get<AgentRevision>(resourcePath(resources.agentRevision, namespace, "rev-1"));
          return rev?.status?.revisionStatus === "DEPLOY_FAILED" && rev;
        },
        20_000,
        `${name}: DEPLOY_FAILED`,
      );
      const ready = revision.status?.conditions?.find((c) => c.type === "Ready") as Condition;
      expect(ready, name).toMatchObject({ status: "False", reason: "SpecRejected" });
      expect(ready.message, name).toContain(field);

      const agd = await cluster.kube.get<AgentDeployment>(
        resourcePath(resources.agentDeployment, namespace, DEPLOYMENT_ID),
      );
      const degraded = agd?.status?.conditions?.find((c) => c.type === "Degraded");
      expect(degraded, name).toMatchObject({ status: "True", reason: "SpecRejected" });
      expect(degraded?.message, name).toContain(field);

      const events = await eventually(
        () => {
          const found = cluster.api.list("events.k8s.io/v1", "events", namespace) as Json[];
          return found.filter((e) => e.type === "Warning" && e.reason === "SpecRejected");
        },
        5_000,
        `${name}: Warning Event`,
      );
      expect(events[0].note, name).toContain(field);
      expect(events[0].regarding).toMatchObject({ kind: "AgentDeployment", name: DEPLOYMENT_ID });

      // Nothing of the deployment was rendered: no agent server, no Redis, no pod template at all.
      for (const [apiVersion, plural] of [
        ["apps/v1", "deployments"],
        ["apps/v1", "statefulsets"],
        ["v1", "pods"],
      ] as const) {
        expect(cluster.api.list(apiVersion, plural, namespace), `${name}: ${plural}`).toEqual([]);
      }
    }
  }, 120_000);

  it("renders a deployment using a Secret an administrator shared with its workspace, every pod restricted", async () => {
    const namespace = "shared";
    await secret(
      namespace,
      "org-llm",
      { key: "shared value" },
      { "agentplane.dev/shared-with-workspaces": "tenant-1" },
    );
    await secret(namespace, OWN_SECRET, { k: "v" });
    await writeDirectly(
      namespace,
      {
        template: { secretReferences: [{ name: "LLM_KEY", secretName: "org-llm", secretKey: "key" }] },
        resources: { sidecars: [{ name: "proxy", image: "example/agent:1" }] },
      },
      "rev-ok",
    );
    const name = `agent-${DEPLOYMENT_ID}`;
    const deployment = await eventually(
      () => cluster.api.get("apps/v1", "deployments", namespace, name) as Json,
      20_000,
      "the agent Deployment",
    );
    const statefulSet = await eventually(
      () => cluster.api.get("apps/v1", "statefulsets", namespace, `${name}-redis`) as Json,
      20_000,
      "the Redis StatefulSet",
    );
    for (const template of [deployment.spec.template, statefulSet.spec.template]) {
      expect(restrictedViolations(template)).toEqual([]);
      expect(template.spec.automountServiceAccountToken).toBe(false);
    }
    // The Redis password Secret and both NetworkPolicies are stored next to them, owned by the deployment.
    const redisSecret = cluster.api.get("v1", "secrets", namespace, `${name}-redis`) as Json;
    expect(Buffer.from(redisSecret.data.password, "base64").toString()).toMatch(/^[0-9a-f]{64}$/);
    const policies = await eventually(() => {
      const listed = cluster.api.list("networking.k8s.io/v1", "networkpolicies", namespace) as Json[];
      return listed.length === 2 && listed;
    });
    expect(policies.map((p) => p.metadata.name).sort()).toEqual([name, `${name}-redis`]);
    for (const obj of [redisSecret, ...policies]) {
      expect(obj.metadata.ownerReferences[0]).toMatchObject({ kind: "AgentDeployment", name: DEPLOYMENT_ID });
    }
  }, 60_000);
});
