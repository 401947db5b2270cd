import { fileURLToPath } from "node:url";
import { type AgentDeployment, type AgentRevision, API_VERSION, loadCrdManifests } from "@agentplane/crds";
import { KubeClient } from "../../operator/src/kube/client.ts";
import { connectionFromKubeconfig, type KubeConnection } from "../../operator/src/kube/config.ts";
import { resourcePath, resources } from "../../operator/src/kube/resources.ts";
import { type KubeApiServer, startKubeApiServer } from "../kube-apiserver/server.ts";
import { type ImageTable, type Kubelet, startKubelet } from "./kubelet.ts";

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

/** Runs the real agent server CLI from the sources with the example project. */
export function exampleAgentServer(): ImageTable[string] {
  return () => ({
    command: process.execPath,
    args: [
      "--conditions=source",
      `${repoRoot}agent-server/src/cli/main.ts`,
      "serve",
      "--config",
      `${repoRoot}agent-server/example/langgraph.json`,
      "--host",
      "127.0.0.1",
    ],
    env: { LOG_LEVEL: "warn" },
  });
}

/** A container whose process exits at once with `code`, every time (a crash loop). */
export function crashingImage(code: number): ImageTable[string] {
  return () => ({ command: process.execPath, args: ["-e", `process.exit(${code})`] });
}

export interface TestCluster {
  api: KubeApiServer;
  connection: KubeConnection;
  kube: KubeClient;
  kubelet: Kubelet;
  createNamespace(name: string): Promise<void>;
  close(): Promise<void>;
}

/** The in-repo API server with the CRDs plus the test kubelet. */
export async function startTestCluster(images: ImageTable, redisUrl: string): Promise<TestCluster> {
  const api = await startKubeApiServer({ crds: loadCrdManifests() });
  const connection = connectionFromKubeconfig(api.kubeconfigPath);
  const kube = new KubeClient(connection);
  const kubelet = await startKubelet({ connection, images, redisUrl });
  return {
    api,
    connection,
    kube,
    kubelet,
    createNamespace: async (name) => {
      await kube.create("/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name } });
    },
    close: async () => {
      await kubelet.close();
      await api.close();
    },
  };
}

/** Polls `check` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => T | Promise<T>,
  timeoutMs = 20_000,
  what = "condition",
): Promise<Exclude<T, undefined | false>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as Exclude<T, undefined | false>;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface NewDeployment {
  namespace: string;
  id: string;
  revisionId: string;
  image: string;
  resources?: NonNullable<AgentRevision["spec"]["template"]["resources"]>;
  redis?: AgentDeployment["spec"]["redis"];
  apiKeysSecretName?: string;
}

/** What the control plane writes for a new deployment: the AgentDeployment, then its first AgentRevision. */
export async function createAgentDeployment(kube: KubeClient, d: NewDeployment): Promise<AgentDeployment> {
  const template = { image: d.image, ...(d.resources ? { resources: d.resources } : {}) };
  const agd = await kube.create<AgentDeployment>(resourcePath(resources.agentDeployment, d.namespace), {
    apiVersion: API_VERSION,
    kind: "AgentDeployment",
    metadata: {
      name: d.id,
      namespace: d.namespace,
      labels: { "agentplane.dev/tenant-id": "tenant-1", "agentplane.dev/deployment-id": d.id },
    },
    spec: {
      displayName: `agent-${d.id.slice(0, 8)}`,
      tenantId: "tenant-1",
      source: "external_docker",
      revisionName: d.revisionId,
      template,
      ...(d.redis ? { redis: d.redis } : {}),
      ...(d.apiKeysSecretName ? { apiKeysSecretName: d.apiKeysSecretName } : {}),
    },
  });
  await createAgentRevision(kube, agd, d.revisionId, template);
  return agd;
}

export async function createAgentRevision(
  kube: KubeClient,
  agd: AgentDeployment,
  revisionId: string,
  template: AgentRevision["spec"]["template"],
  revisionStatus: NonNullable<AgentRevision["status"]>["revisionStatus"] = "AWAITING_DEPLOY",
): Promise<AgentRevision> {
  const namespace = agd.metadata.namespace as string;
  const revision = await kube.create<AgentRevision>(resourcePath(resources.agentRevision, namespace), {
    apiVersion: API_VERSION,
    kind: "AgentRevision",
    metadata: {
      name: revisionId,
      namespace,
      labels: { "agentplane.dev/deployment-id": agd.metadata.name, "agentplane.dev/revision-id": revisionId },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: "AgentDeployment",
          name: agd.metadata.name,
          uid: agd.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      deploymentId: agd.metadata.name,
      source: "external_docker",
      sourceRevisionConfig: { image_uri: template.image },
      template,
    },
  });
  return kube
    .mergePatch<AgentRevision>(
      `${resourcePath(resources.agentRevision, namespace, revisionId)}/status`,
      { status: { revisionStatus } },
      "test-control-plane",
    )
    .then(() => revision);
}
