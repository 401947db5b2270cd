import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AGENT_DEPLOYMENT_PLURAL, GROUP, loadCrdManifests, VERSION } from "@agentplane/crds";
import { ApiextensionsV1Api, KubeConfig, type V1CustomResourceDefinition } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningControlPlane, startControlPlane } from "../app.ts";
import { call, deploymentBody, identities, kubeClientsFor } from "../testing/harness.ts";

/**
 * The same API flow against a real Kubernetes API server: the cluster of `KUBECONFIG`
 * (`CONTROL_PLANE_TEST_KUBECONFIG` to be explicit), or a throw-away k3s via testcontainers when a
 * Docker engine runs. Objects go to fresh namespaces that are deleted afterwards.
 */
async function realCluster(): Promise<{ kubeconfigPath: string; stop(): Promise<void> } | undefined> {
  const explicit = process.env.CONTROL_PLANE_TEST_KUBECONFIG ?? process.env.KUBECONFIG;
  if (explicit) return { kubeconfigPath: explicit, stop: async () => {} };
  try {
    const { GenericContainer, Wait, getContainerRuntimeClient } = await import("testcontainers");
    await getContainerRuntimeClient();
    const k3s = await new GenericContainer("rancher/k3s:v1.31.4-k3s1")
      .withPrivilegedMode()
      .withTmpFs({ "/run": "rw", "/var/run": "rw" })
      .withCommand(["server", "--disable=traefik,metrics-server", "--tls-san=127.0.0.1"])
      .withExposedPorts(6443)
      .withWaitStrategy(Wait.forLogMessage(/Node controller sync successful/))
      .withStartupTimeout(180_000)
      .start();
    const { output } = await k3s.exec(["cat", "/etc/rancher/k3s/k3s.yaml"]);
    const kubeconfig = output.replace("https://127.0.0.1:6443", `https://${k3s.getHost()}:${k3s.getMappedPort(6443)}`);
    const kubeconfigPath = join(mkdtempSync(join(tmpdir(), "k3s-")), "config");
    writeFileSync(kubeconfigPath, kubeconfig);
    return { kubeconfigPath, stop: async () => void (await k3s.stop()) };
  } catch {
    return undefined;
  }
}

/** A new CRD is served only once it is Established; until then listing its objects fails. */
async function untilCrdServed(list: () => Promise<unknown>): Promise<void> {
  for (let waited = 0; ; waited += 250) {
    if (
      await list().then(
        () => true,
        () => false,
      )
    )
      return;
    if (waited > 30_000) throw new Error("the AgentDeployment CRD was not served within 30 s");
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const cluster = await realCluster();
if (!cluster) {
  console.warn(
    "control-plane real-cluster tests skipped: set KUBECONFIG (or CONTROL_PLANE_TEST_KUBECONFIG) to a cluster you may " +
      "create CRDs and namespaces in, or run a Docker engine for a testcontainers k3s.",
  );
}

describe.skipIf(!cluster)("control plane against a real Kubernetes cluster", () => {
  const ids = identities();
  const namespace = `cp-test-${randomUUID().slice(0, 8)}`;
  const providers = `${namespace}-auth`;
  let kube: ReturnType<typeof kubeClientsFor>;
  let controlPlane: RunningControlPlane;
  const api = (method: string, path: string, body?: unknown) =>
    call(controlPlane.url, method, path, { body, headers: { "x-api-key": ids.keys.a1 } });

  beforeAll(async () => {
    const kubeconfigPath = cluster?.kubeconfigPath ?? "";
    kube = kubeClientsFor(kubeconfigPath);
    const config = new KubeConfig();
    config.loadFromFile(kubeconfigPath);
    const extensions = config.makeApiClient(ApiextensionsV1Api);
    for (const crd of loadCrdManifests()) {
      await extensions
        .createCustomResourceDefinition({ body: crd as unknown as V1CustomResourceDefinition })
        .catch((error: { code?: number }) => {
          if (error.code !== 409) throw error;
        });
    }
    for (const name of [namespace, providers]) await kube.core.createNamespace({ body: { metadata: { name } } });
    await untilCrdServed(() =>
      kube.custom.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural: AGENT_DEPLOYMENT_PLURAL,
        namespace,
      }),
    );
    controlPlane = await startControlPlane({
      port: 0,
      host: "127.0.0.1",
      kubeconfigPath,
      layout: { kind: "shared", namespaces: [namespace] },
      providersNamespace: providers,
      apiKeys: ids.grants,
      logLevel: "silent",
    });
  }, 240_000);

  afterAll(async () => {
    await controlPlane?.close();
    for (const name of [namespace, providers]) await kube?.core.deleteNamespace({ name }).catch(() => undefined);
    await cluster?.stop();
  });

  it("creates, reads, patches into a new revision, lists and deletes a deployment", async () => {
    const created = await api("POST", "/v2/deployments", deploymentBody("real-cluster", { source_config: {} }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id;
    expect((await api("GET", `/v2/deployments/${id}`)).body).toEqual(created.body);
    const revision = await api("GET", `/v2/deployments/${id}/revisions/${created.body.latest_revision_id}`);
    expect(revision.body.status).toBe("AWAITING_DEPLOY");

    const patched = await api("PATCH", `/v2/deployments/${id}`, {
      source_revision_config: { image_uri: "registry.example/agent:2" },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.latest_revision_id).not.toBe(created.body.latest_revision_id);
    expect((await api("GET", `/v2/deployments/${id}/revisions`)).body.resources).toHaveLength(2);
    expect(
      (await api("GET", "/v2/deployments?name_contains=real")).body.resources.map((d: { id: string }) => d.id),
    ).toEqual([id]);
    expect((await api("POST", "/v2/deployments", deploymentBody("real-cluster", { source_config: {} }))).status).toBe(
      409,
    );

    expect((await api("DELETE", `/v2/deployments/${id}`)).status).toBe(204);
    // without the operator no finalizer holds it: it goes straight away, its Secret and revisions with it (GC)
    await expect.poll(async () => (await api("GET", `/v2/deployments/${id}`)).status, { timeout: 30_000 }).toBe(404);
  });

  it("stores OAuth providers with the client secret in a Secret", async () => {
    const body = {
      provider_id: "gh",
      name: "GitHub",
      client_id: "c",
      client_secret: "s3cr3t",
      auth_url: "https://a.example/a",
      token_url: "https://a.example/t",
    };
    const created = await api("POST", "/v2/auth/providers", body);
    expect(created.status).toBe(200);
    expect(JSON.stringify(created.body)).not.toContain("s3cr3t");
    expect((await api("GET", "/v2/auth/providers/gh")).body).toEqual(created.body);
    expect((await api("DELETE", "/v2/auth/providers/gh")).status).toBe(200);
  });
});
