import { randomUUID } from "node:crypto";
import { hashApiKey } from "@agentplane/common";
import { Client } from "@langchain/langgraph-sdk";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningControlPlane, startControlPlane } from "../control-plane/src/app.ts";
import { settingsFromEnv } from "../operator/src/config.ts";
import { KubeClient } from "../operator/src/kube/client.ts";
import { connectionFromKubeconfig, type KubeConnection } from "../operator/src/kube/config.ts";
import { type RunningOperator, startOperator } from "../operator/src/operator.ts";
import { eventually, exampleAgentServer, startTestCluster, type TestCluster } from "../testing/kubelet/cluster.ts";
import { testRedisUrl } from "../testing/redis.ts";

const NS = "agents";
const IMAGES = ["registry.example/agent:1", "registry.example/agent:2"] as const;

interface Environment {
  connection: KubeConnection;
  kubeconfigPath: string;
  images: readonly [string, string];
  /** Resolves when nothing the deployment made is left in the namespace. */
  allGone(deploymentId: string): Promise<boolean>;
  close(): Promise<void>;
}

/** The e2e story, the same against the in-repo test server and against a real cluster. */
function scenario(start: () => Promise<Environment>, timeoutMs: number) {
  let env: Environment;
  let controlPlane: RunningControlPlane;
  let operator: RunningOperator;
  const key = `e2e-${randomUUID()}`;
  const org = randomUUID();
  const workspace = randomUUID();
  let deploymentId = "";
  let firstRevision = "";

  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${controlPlane.url}${path}`, {
      method,
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
  const revision = async (id: string) => (await api("GET", `/v2/deployments/${deploymentId}/revisions/${id}`)).body;

  beforeAll(async () => {
    env = await start();
    controlPlane = await startControlPlane({
      port: 0,
      host: "127.0.0.1",
      kubeconfigPath: env.kubeconfigPath,
      layout: { kind: "shared", namespaces: [NS] },
      providersNamespace: NS,
      apiKeys: [{ hash: hashApiKey(key), organization_id: org, workspace_ids: [workspace] }],
      logLevel: "silent",
    });
    operator = await startOperator(
      env.connection,
      settingsFromEnv({
        HEALTH_PORT: "0",
        HEALTH_HOST: "127.0.0.1",
        LEADER_ELECTION: "false",
        POLL_SECONDS: "1",
        AGENT_SERVICE_TYPE: "LoadBalancer",
      }),
      pino({ level: "silent" }),
    );
  }, 120_000);

  afterAll(async () => {
    await operator?.close();
    await controlPlane?.close();
    await env?.close();
  });

  it(
    "POST /v2/deployments -> operator -> agent server process -> revision DEPLOYED",
    async () => {
      const created = await api("POST", "/v2/deployments", {
        name: `e2e-${randomUUID().slice(0, 8)}`,
        source: "external_docker",
        source_config: {
          listener_config: { k8s_namespace: NS },
          resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.5, memory_mb: 256 },
        },
        source_revision_config: { image_uri: env.images[0] },
        secrets: [{ name: "ECHO_MODEL_PREFIX", value: "Echo: " }],
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(JSON.stringify(created.body)).not.toContain(hashApiKey(key));
      deploymentId = created.body.id;
      firstRevision = created.body.latest_revision_id;
      const deployed = await eventually(
        async () => {
          const r = await revision(firstRevision);
          return r.status === "DEPLOYED" ? r : undefined;
        },
        timeoutMs,
        "the first revision to be DEPLOYED",
      );
      expect(deployed.id).toBe(firstRevision);
      const deployment = (await api("GET", `/v2/deployments/${deploymentId}`)).body;
      expect(deployment).toMatchObject({ status: "READY", active_revision_id: firstRevision });
      expect(deployment.url).toMatch(/^https?:\/\//);
    },
    timeoutMs + 10_000,
  );

  it("the LangGraph SDK, with the control plane's API key, creates a thread and a run on the deployment's URL", async () => {
    const { url } = (await api("GET", `/v2/deployments/${deploymentId}`)).body;
    // The control plane wrote the hashes of the workspace's API keys into `<id>-api-keys`: no key, no entry.
    const anonymous = await fetch(`${url}/threads`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(anonymous.status).toBe(401);
    const wrongKey = await fetch(`${url}/threads`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": `${key}-not` },
      body: "{}",
    });
    expect(wrongKey.status).toBe(401);
    const client = new Client({ apiUrl: url, apiKey: key });
    const thread = await client.threads.create();
    expect(thread.thread_id).toMatch(/^[0-9a-f-]{36}$/);
    const result = (await client.runs.wait(thread.thread_id, "agent", {
      input: { messages: [{ role: "human", content: "hello" }] },
    })) as { messages?: { content: string }[] };
    // "Echo: " is the deployment's secret ECHO_MODEL_PREFIX: Secret -> envFrom -> the agent server process.
    expect(result.messages?.at(-1)?.content).toBe("Echo: hello");
    const fetched = await client.threads.get(thread.thread_id);
    expect(fetched.thread_id).toBe(thread.thread_id);
  }, 60_000);

  it(
    "PATCH rolls a new revision: it becomes DEPLOYED and replaces the old one",
    async () => {
      const patched = await api("PATCH", `/v2/deployments/${deploymentId}`, {
        source_revision_config: { image_uri: env.images[1] },
      });
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      const second = patched.body.latest_revision_id;
      expect(second).not.toBe(firstRevision);
      await eventually(
        async () => (await revision(second)).status === "DEPLOYED",
        timeoutMs,
        "the new revision to be DEPLOYED",
      );
      await eventually(
        async () => {
          const deployment = (await api("GET", `/v2/deployments/${deploymentId}`)).body;
          return deployment.active_revision_id === second && deployment.status === "READY";
        },
        timeoutMs,
        "the deployment to serve the new revision",
      );
      // The old revision keeps DEPLOYED (clients show it as replaced).
      expect((await revision(firstRevision)).status).toBe("DEPLOYED");
      const { url } = (await api("GET", `/v2/deployments/${deploymentId}`)).body;
      const thread = await new Client({ apiUrl: url, apiKey: key }).threads.create();
      expect(thread.thread_id).toBeTruthy();
    },
    2 * timeoutMs,
  );

  it(
    "DELETE removes everything",
    async () => {
      const deleted = await api("DELETE", `/v2/deployments/${deploymentId}`);
      expect([200, 202, 204]).toContain(deleted.status);
      await eventually(
        async () => (await api("GET", `/v2/deployments/${deploymentId}`)).status === 404,
        timeoutMs,
        "404",
      );
      await eventually(() => env.allGone(deploymentId), timeoutMs, "every child to be gone");
    },
    2 * timeoutMs,
  );
}

describe("end to end on the in-repo Kubernetes API test server with the test kubelet", () => {
  let cluster: TestCluster;
  scenario(async () => {
    cluster = await startTestCluster(
      { [IMAGES[0]]: exampleAgentServer(), [IMAGES[1]]: exampleAgentServer() },
      testRedisUrl(),
    );
    await cluster.createNamespace(NS);
    return {
      connection: cluster.connection,
      kubeconfigPath: cluster.api.kubeconfigPath,
      images: IMAGES,
      allGone: async (id) => {
        const kinds = [
          ["apps/v1", "deployments"],
          ["apps/v1", "replicasets"],
          ["v1", "pods"],
          ["v1", "services"],
          ["apps/v1", "statefulsets"],
          ["agentplane.dev/v1alpha1", "agentrevisions"],
          ["agentplane.dev/v1alpha1", "agentdeployments"],
        ] as const;
        const left = kinds
          .flatMap(([v, p]) => cluster.api.list(v, p, NS))
          .filter((o) => JSON.stringify(o).includes(id));
        return left.length === 0 && cluster.kubelet.podUrls(NS, `agent-${id}`).length === 0;
      },
      close: () => cluster.close(),
    };
  }, 90_000);
});

/**
 * The same story on a real cluster: set E2E_KUBECONFIG (a cluster with the CRDs installed and a
 * namespace `agents`) and E2E_AGENT_IMAGES (two comma-separated agent-server images whose Service
 * URL is reachable from here, e.g. via a LoadBalancer). No Docker engine or cluster on this machine,
 * so it is skipped unless configured.
 */
const realCluster = process.env.E2E_KUBECONFIG;
const realImages = process.env.E2E_AGENT_IMAGES?.split(",");
describe.skipIf(!realCluster || realImages?.length !== 2)(
  "end to end on a real cluster (skipped: set E2E_KUBECONFIG and E2E_AGENT_IMAGES to run it)",
  () => {
    scenario(async () => {
      const connection = connectionFromKubeconfig(realCluster as string);
      const kube = new KubeClient(connection);
      return {
        connection,
        kubeconfigPath: realCluster as string,
        images: realImages as unknown as [string, string],
        allGone: async (id) => {
          const list = await kube.list(
            `/apis/apps/v1/namespaces/${NS}/deployments`,
            `app.kubernetes.io/instance=${id}`,
          );
          return list.items.length === 0;
        },
        close: async () => {},
      };
    }, 300_000);
  },
);
