import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadCrdManifests } from "@agentplane/crds";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane } from "../control-plane/src/app.ts";
import { loadConfig as loadControlPlaneConfig } from "../control-plane/src/config.ts";
import { settingsFromEnv } from "../operator/src/config.ts";
import { connectionFromKubeconfig } from "../operator/src/kube/config.ts";
import { startOperator } from "../operator/src/operator.ts";
import { BASE_VALUES, type KubeManifest, renderChart, withValues } from "../testing/helm.ts";
import type { Attributes } from "../testing/kube-apiserver/authorization.ts";
import { type KubeApiServer, startKubeApiServer } from "../testing/kube-apiserver/server.ts";
import { allowed, recordingProxy, rulesFor } from "../testing/rbac-recording.ts";

/**
 * The chart's RBAC checked against the API calls the control plane and the operator really make:
 * each talks to the Kubernetes API test server through its own recording proxy while the quick-start
 * flow runs (create, patch, OAuth providers, delete); every recorded request must be allowed by the
 * rendered Roles/ClusterRoles bound to that component's ServiceAccount, and every granted permission
 * must have been used or be listed below with the reason it cannot be exercised here. The test server
 * enforces the same rules itself (each component's requests carry its ServiceAccount's name as their
 * token), including the admission checks that depend on them (OwnerReferencesPermissionEnforcement),
 * so a missing grant fails the flow as it would on a hardened cluster.
 */

const RELEASE_NAMESPACE = "agentplane";
const AGENT_NAMESPACE = "agents";

function manifestNamed(manifests: KubeManifest[], kind: string, suffix: string): KubeManifest {
  const found = manifests.find((m) => m.kind === kind && m.metadata.name.endsWith(suffix));
  if (!found) throw new Error(`the chart rendered no ${kind} *${suffix}`);
  return found;
}

/** The literal `env` of a Deployment's first container (valueFrom entries are the cluster's to fill). */
function literalEnv(deployment: KubeManifest): Record<string, string> {
  const env = deployment.spec.template.spec.containers[0].env as { name: string; value?: string }[];
  return Object.fromEntries(env.flatMap((e) => (e.value === undefined ? [] : [[e.name, e.value]])));
}

/** A client of the test server with the administrator's (unrestricted) credentials. */
function kubeClientsOf(kubeconfigPath: string): CoreV1Api {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfigPath);
  return config.makeApiClient(CoreV1Api);
}

const ADMIN_TOKEN = "agentplane-test";
const serviceAccountUser = (name: string) => `system:serviceaccount:${RELEASE_NAMESPACE}:${name}`;

/** A copy of the test server's kubeconfig pointed at `server`, authenticating as `serviceAccount`. */
function kubeconfigVia(kube: KubeApiServer, server: string, serviceAccount: string): string {
  const path = `${kube.kubeconfigPath}.${serviceAccount}`;
  const text = readFileSync(kube.kubeconfigPath, "utf8").replace(kube.url, server);
  writeFileSync(path, text.replace(`token: ${ADMIN_TOKEN}`, `token: ${serviceAccountUser(serviceAccount)}`));
  return path;
}

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Granted but not reachable without a real cluster, each with the reason. */
const NOT_EXERCISED: Record<string, string> = {
  "control-plane agentplane.dev agentrevisions delete": "only when creating a deployment fails half-way",
  "operator  configmaps get":
    "only for a spec naming a ConfigMap not its own (the pod policy reads its sharing annotation)",
  "operator  serviceaccounts get":
    "only for a spec naming a ServiceAccount (the pod policy reads its sharing annotation)",
  "operator  persistentvolumeclaims get": "the managed Redis volume only exists where a StatefulSet controller runs",
  "operator  persistentvolumeclaims delete": "the managed Redis volume only exists where a StatefulSet controller runs",
  "operator coordination.k8s.io leases update": "the lease is renewed every retry period, which may outlast the flow",
};

const workspace = BASE_VALUES.controlPlane.apiKeys.grants[0]!.workspace_ids[0]!;

describe.each([
  // The default layout: a namespace per workspace, created by the control plane.
  ["a namespace per workspace, operator watching all namespaces (ClusterRoles)", "", `agentplane-${workspace}`],
  ["shared namespaces, operator watching one namespace (Roles)", AGENT_NAMESPACE, AGENT_NAMESPACE],
])(
  "chart RBAC against the API calls the control plane and operator make: %s",
  (_mode, watchNamespace, agentNamespace) => {
    let kube: KubeApiServer;
    let controlPlaneProxy: Awaited<ReturnType<typeof recordingProxy>>;
    let operatorProxy: Awaited<ReturnType<typeof recordingProxy>>;
    /** Every authorization the test server granted: requests and admission checks alike. */
    const granted: Attributes[] = [];
    const closers: (() => Promise<unknown>)[] = [];
    const controlPlaneValues = watchNamespace
      ? { namespaceLayout: "shared", namespaces: [AGENT_NAMESPACE] }
      : { namespaceLayout: "workspace" };
    const manifests = renderChart(
      withValues(BASE_VALUES, { operator: { watchNamespace }, controlPlane: controlPlaneValues }),
      [],
      RELEASE_NAMESPACE,
    );

    beforeAll(async () => {
      const rulesByUser = new Map(
        ["ap-agentplane-control-plane", "ap-agentplane-operator"].map((sa) => [
          serviceAccountUser(sa),
          rulesFor(manifests, sa, RELEASE_NAMESPACE),
        ]),
      );
      kube = await startKubeApiServer({
        crds: loadCrdManifests(),
        namespaces: ["default", RELEASE_NAMESPACE, AGENT_NAMESPACE],
        authorize: (attributes) => {
          if (attributes.user === ADMIN_TOKEN) return true;
          const ok = allowed(rulesByUser.get(attributes.user) ?? [], attributes);
          if (ok) granted.push(attributes);
          return ok;
        },
      });
      controlPlaneProxy = await recordingProxy(kube.url);
      operatorProxy = await recordingProxy(kube.url);
      closers.push(
        () => kube.close(),
        () => controlPlaneProxy.close(),
        () => operatorProxy.close(),
      );

      // Both components are configured from what the chart renders: their container env, and the
      // API-key grants Secret (the key whose SHA-256 is in BASE_VALUES is "test").
      const secretsDir = mkdtempSync(join(tmpdir(), "rbac-"));
      closers.push(async () => rmSync(secretsDir, { recursive: true, force: true }));
      const grantsFile = join(secretsDir, "api-keys.jsonl");
      writeFileSync(grantsFile, manifestNamed(manifests, "Secret", "-api-keys").stringData["api-keys.jsonl"]);
      const controlPlaneEnv = literalEnv(manifestNamed(manifests, "Deployment", "-control-plane"));
      expect(controlPlaneEnv.CONTROL_PLANE_API_KEYS_FILE).toBe("/etc/agentplane/api-keys/api-keys.jsonl");
      const controlPlane = await startControlPlane({
        ...loadControlPlaneConfig({
          ...controlPlaneEnv,
          CONTROL_PLANE_API_KEYS_FILE: grantsFile,
          PORT: "0",
          HOST: "127.0.0.1",
        }),
        kubeconfigPath: kubeconfigVia(kube, controlPlaneProxy.url, "ap-agentplane-control-plane"),
        logLevel: "silent",
      });
      closers.unshift(() => controlPlane.close());

      const operatorConnection = connectionFromKubeconfig(
        kubeconfigVia(kube, operatorProxy.url, "ap-agentplane-operator"),
      );
      const settings = settingsFromEnv({
        ...literalEnv(manifestNamed(manifests, "Deployment", "-operator")),
        // fieldRef values and the ports this test can use
        OPERATOR_NAMESPACE: RELEASE_NAMESPACE,
        POD_NAME: "ap-agentplane-operator-0",
        HEALTH_PORT: "0",
        HEALTH_HOST: "127.0.0.1",
        POLL_SECONDS: "1",
      });
      expect(settings.watchNamespace).toBe(watchNamespace || undefined);
      const operator = await startOperator(operatorConnection, settings, pino({ level: "silent" }));
      closers.unshift(() => operator.close());

      const key = "test";
      const api = async (method: string, path: string, body?: unknown) => {
        const response = await fetch(`${controlPlane.url}${path}`, {
          method,
          headers: { "x-api-key": key, "x-tenant-id": workspace, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await response.text();
        return { status: response.status, body: text ? JSON.parse(text) : undefined };
      };
      const created = await api("POST", "/v2/deployments", {
        name: "rbac-agent",
        source: "external_docker",
        source_config: { resource_spec: { min_scale: 1, max_scale: 3, cpu: 0.5 } },
        source_revision_config: { image_uri: "registry.example/agent:1" },
        secrets: [{ name: "MODEL_API_KEY", value: "not-a-real-key" }],
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = created.body.id as string;
      expect(created.body.source_config.listener_config.k8s_namespace).toBe(agentNamespace);
      await until(() => kube.list("apps/v1", "deployments", agentNamespace).length > 0, "the agent Deployment");
      // The control plane wrote the API-key Secret (create) and the operator mounted it into the agent server.
      expect(JSON.stringify(kube.list("apps/v1", "deployments", agentNamespace))).toContain(`${id}-api-keys`);
      expect((await api("GET", "/v2/deployments")).status).toBe(200);
      // A Redis StatefulSet that could not create its pod (no controller runs here: written as one
      // reports it): the operator reads why from its Events.
      const redisSets = kube.api.resource("apps/v1", "statefulsets");
      const [redis] = kube.list("apps/v1", "statefulsets", agentNamespace);
      expect(redis).toBeDefined();
      kube.api.update(
        redisSets,
        agentNamespace,
        redis?.metadata.name as string,
        { ...redis, status: { observedGeneration: redis?.metadata.generation, replicas: 0 } },
        { subresource: "status", fieldManager: "statefulset-controller" },
      );
      await until(
        () => operatorProxy.calls.some((call) => call.resource === "events" && call.verb === "list"),
        "the operator to read the Redis StatefulSet's Events",
      );
      // What an administrator shared with the workspace, which the control plane reads before using it.
      const shared = { annotations: { "agentplane.dev/shared-with-workspaces": workspace } };
      const admin = kubeClientsOf(kube.kubeconfigPath);
      await admin.createNamespacedSecret({ namespace: agentNamespace, body: { metadata: { name: "db", ...shared } } });
      await admin.createNamespacedConfigMap({
        namespace: agentNamespace,
        body: { metadata: { name: "cfg", ...shared } },
      });
      await admin.createNamespacedServiceAccount({
        namespace: agentNamespace,
        body: { metadata: { name: "runner", ...shared } },
      });
      const patched = await api("PATCH", `/v2/deployments/${id}`, {
        source_revision_config: { image_uri: "registry.example/agent:2" },
        secret_references: [{ name: "DB_PASSWORD", secret_name: "db", secret_key: "pw" }],
        source_config: {
          resource_spec: {
            service_account_name: "runner",
            volumes: [{ name: "cfg", configMap: { name: "cfg" } }],
            volume_mounts: [{ name: "cfg", mountPath: "/etc/cfg" }],
          },
        },
      });
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      const revisions = await api("GET", `/v2/deployments/${id}/revisions`);
      expect(revisions.status).toBe(200);
      expect((await api("GET", `/v2/deployments/${id}/revisions/${revisions.body.resources[0].id}`)).status).toBe(200);
      // Deploy logs list the deployment's agent-server pods and read each one's log (this pod is on no
      // node, so it has none yet); listeners are ConfigMaps in the release namespace.
      const revisionId = revisions.body.resources[0].id as string;
      await admin.createNamespacedPod({
        namespace: agentNamespace,
        body: {
          metadata: {
            name: "agent-pod",
            labels: {
              "agentplane.dev/tenant-id": workspace,
              "agentplane.dev/deployment-id": id,
              "agentplane.dev/revision-id": revisionId,
              "app.kubernetes.io/component": "agent-server",
            },
          },
          spec: {
            securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
            containers: [
              {
                name: "agent-server",
                image: "registry.example/agent:2",
                securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
              },
            ],
          },
        },
      });
      const logs = await api("GET", `/v2/deployments/${id}/revisions/${revisionId}/logs?type=deploy`);
      expect(logs, JSON.stringify(logs.body)).toMatchObject({ status: 200, body: { logs: [], next_offset: null } });
      const listener = await api("POST", "/v2/listeners", {
        compute_type: "k8s",
        compute_id: "edge",
        compute_config: { k8s_namespaces: ["apps"] },
      });
      expect(listener.status, JSON.stringify(listener.body)).toBe(201);
      expect((await api("PATCH", `/v2/listeners/${listener.body.id}`, { version: "2" })).status).toBe(200);
      expect((await api("GET", "/v2/listeners")).status).toBe(200);
      expect((await api("DELETE", `/v2/listeners/${listener.body.id}`)).status).toBe(204);

      const provider = {
        provider_id: "rbac-idp",
        name: "IdP",
        client_id: "client",
        client_secret: "s3cret",
        auth_url: "https://idp.example/auth",
        token_url: "https://idp.example/token",
      };
      expect((await api("POST", "/v2/auth/providers", provider)).status).toBeLessThan(300);
      expect((await api("GET", "/v2/auth/providers")).status).toBe(200);
      expect((await api("PATCH", "/v2/auth/providers/rbac-idp", { client_secret: "n3w" })).status).toBe(200);
      expect((await api("DELETE", "/v2/auth/providers/rbac-idp")).status).toBeLessThan(300);

      expect((await api("DELETE", `/v2/deployments/${id}`)).status).toBe(204);
      await until(
        () => kube.list("agentplane.dev/v1alpha1", "agentdeployments", agentNamespace).length === 0,
        "the AgentDeployment to be removed",
      );
    }, 60_000);

    afterAll(async () => {
      for (const close of closers) await close();
    });

    it.each([
      ["control plane", "ap-agentplane-control-plane", () => controlPlaneProxy.calls],
      ["operator", "ap-agentplane-operator", () => operatorProxy.calls],
    ])("every call of the %s is allowed to its ServiceAccount", (_name, serviceAccount, calls) => {
      const rules = rulesFor(manifests, serviceAccount, RELEASE_NAMESPACE);
      expect(calls().length).toBeGreaterThan(5);
      const refused = calls().filter((call) => !allowed(rules, call));
      expect([...new Set(refused.map((call) => JSON.stringify(call)))]).toEqual([]);
    });

    it.each([
      ["control-plane", "ap-agentplane-control-plane", () => controlPlaneProxy.calls],
      ["operator", "ap-agentplane-operator", () => operatorProxy.calls],
    ])(
      "%s: every granted permission is used, or listed with the reason it is not exercised here",
      (component, sa, calls) => {
        const checked = granted.filter((g) => g.user === serviceAccountUser(sa));
        const used = new Set([...calls(), ...checked].map((call) => `${call.group} ${call.resource} ${call.verb}`));
        const unused = rulesFor(manifests, sa, RELEASE_NAMESPACE).flatMap(({ rule }) =>
          rule.apiGroups.flatMap((group) =>
            rule.resources.flatMap((resource) =>
              rule.verbs.map((verb) => `${group} ${resource} ${verb}`).filter((grant) => !used.has(grant)),
            ),
          ),
        );
        expect([...new Set(unused)].filter((grant) => !(`${component} ${grant}` in NOT_EXERCISED))).toEqual([]);
      },
    );
  },
);

describe("a control plane missing a Kubernetes permission", () => {
  it("answers 503 naming what Kubernetes forbade, not 500 (without update on agentdeployments/finalizers)", async () => {
    const manifests = renderChart(BASE_VALUES, [], RELEASE_NAMESPACE);
    const sa = "ap-agentplane-control-plane";
    const rules = rulesFor(manifests, sa, RELEASE_NAMESPACE).filter(
      ({ rule }) => !rule.resources.some((r) => r.endsWith("/finalizers")),
    );
    const kube = await startKubeApiServer({
      crds: loadCrdManifests(),
      namespaces: ["default", RELEASE_NAMESPACE],
      authorize: (attributes) => attributes.user === ADMIN_TOKEN || allowed(rules, attributes),
    });
    const secretsDir = mkdtempSync(join(tmpdir(), "rbac-"));
    const grantsFile = join(secretsDir, "api-keys.jsonl");
    writeFileSync(grantsFile, manifestNamed(manifests, "Secret", "-api-keys").stringData["api-keys.jsonl"]);
    const controlPlane = await startControlPlane({
      ...loadControlPlaneConfig({
        ...literalEnv(manifestNamed(manifests, "Deployment", "-control-plane")),
        CONTROL_PLANE_API_KEYS_FILE: grantsFile,
        PORT: "0",
        HOST: "127.0.0.1",
      }),
      kubeconfigPath: kubeconfigVia(kube, kube.url, sa),
      logLevel: "silent",
    });
    try {
      const response = await fetch(`${controlPlane.url}/v2/deployments`, {
        method: "POST",
        headers: { "x-api-key": "test", "x-tenant-id": workspace, "content-type": "application/json" },
        body: JSON.stringify({
          name: "no-finalizers",
          source: "external_docker",
          source_config: { resource_spec: { min_scale: 1, max_scale: 1 } },
          source_revision_config: { image_uri: "registry.example/agent:1" },
          secrets: [],
        }),
      });
      const body = (await response.json()) as { detail: string };
      expect(response.status, JSON.stringify(body)).toBe(503);
      expect(body.detail).toContain("lacks a Kubernetes permission");
      expect(body.detail).toContain("cannot set blockOwnerDeletion");
    } finally {
      await controlPlane.close();
      await kube.close();
      rmSync(secretsDir, { recursive: true, force: true });
    }
  });
});
