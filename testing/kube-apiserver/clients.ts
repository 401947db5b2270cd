import { API_VERSION, GROUP, loadCrdManifests, VERSION } from "@agentplane/crds";
import { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, KubernetesObjectApi } from "@kubernetes/client-node";
import { type KubeApiServer, type KubeApiServerOptions, startKubeApiServer } from "./server.ts";

/** A test server with the project's CRDs plus @kubernetes/client-node clients pointed at it. */
export async function startWithClients(options: KubeApiServerOptions = {}) {
  const kube: KubeApiServer = await startKubeApiServer({ crds: loadCrdManifests(), ...options });
  const kc = new KubeConfig();
  kc.loadFromFile(kube.kubeconfigPath);
  return {
    kube,
    kc,
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    objects: KubernetesObjectApi.makeApiClient(kc),
  };
}

export const agd = { group: GROUP, version: VERSION, plural: "agentdeployments" };
export const agr = { group: GROUP, version: VERSION, plural: "agentrevisions" };

export function agentDeployment(name: string, image = "registry.example/agent:1") {
  return {
    apiVersion: API_VERSION,
    kind: "AgentDeployment",
    metadata: { name, labels: { "agentplane.dev/tenant-id": "t1" } },
    spec: {
      displayName: `agent-${name}`,
      tenantId: "t1",
      source: "external_docker",
      revisionName: "r1",
      template: { image },
    },
  };
}

/** The parsed Status body of a failed client-node call. */
export async function failure(
  call: Promise<unknown>,
): Promise<{ code: number; reason: string; message: string; details?: any }> {
  try {
    await call;
  } catch (error) {
    const { body } = error as { body: unknown };
    return typeof body === "string" ? JSON.parse(body) : (body as any);
  }
  throw new Error("expected the call to fail");
}

export async function eventually<T>(
  read: () => T | Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs = 5000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
