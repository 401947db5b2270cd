import { revisionSecretName, SHARED_WITH_ANNOTATION } from "@agentplane/crds";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { providerObjectName } from "../providers/store.ts";
import {
  call,
  clusterSnapshot,
  type Harness,
  PROVIDERS_NAMESPACE,
  startHarness,
  TENANT_PREFIX,
} from "../testing/harness.ts";
import { OperatorStandIn } from "../testing/operator-stand-in.ts";

/**
 * Issue #15: what an attacker holding an ordinary API key of one organization (workspace A1) tries
 * against another tenant (organization B) and against the platform. Each request is refused with the
 * right 4xx and leaves every object in the cluster as it was. Tenants get their own namespaces
 * (the default layout).
 */

let h: Harness;
let operator: OperatorStandIn;
let victim: { id: string; latest_revision_id: string };
let mine: { id: string; latest_revision_id: string };
const nsOf = (workspace: string) => `${TENANT_PREFIX}${workspace}`;

const body = (overrides: Record<string, unknown> = {}) => ({
  name: `attack-${Math.random().toString(36).slice(2, 8)}`,
  source: "external_docker",
  source_config: { resource_spec: { min_scale: 1 } },
  source_revision_config: { image_uri: "registry.example/agent:1" },
  secrets: [{ name: "OPENAI_API_KEY", value: "sk-test" }],
  ...overrides,
});
const withSpec = (resourceSpec: Record<string, unknown>) =>
  body({ source_config: { resource_spec: { min_scale: 1, ...resourceSpec } } });
const sidecar = (extra: Record<string, unknown>) => ({ name: "helper", image: "busybox", ...extra });
/**
 * A request body whose `marker` string is replaced by JSON nested `depth` levels deep, as raw text
 * (JSON.stringify itself overflows the stack on it, which is how such bodies used to give 500s).
 */
const MARKER = "__nested__";
const deep = (document: unknown, depth = 20_000) =>
  JSON.stringify(document).replace(`"${MARKER}"`, `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`);

beforeAll(async () => {
  h = await startHarness({ kind: "workspace", prefix: TENANT_PREFIX });
  operator = new OperatorStandIn(h.cluster.custom);
  const b = { "x-api-key": h.ids.keys.b };
  const created = await call(h.controlPlane.url, "POST", "/v2/deployments", {
    body: body({ name: "victim", secrets: [{ name: "VICTIM_TOKEN", value: "victim-secret" }] }),
    headers: b,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  victim = created.body;
  const provider = await call(h.controlPlane.url, "POST", "/v2/auth/providers", {
    body: {
      provider_id: "b-idp",
      name: "B",
      client_id: "c",
      client_secret: "b-client-secret",
      auth_url: "https://b.example/auth",
      token_url: "https://b.example/token",
    },
    headers: b,
  });
  expect(provider.status).toBeLessThan(300);
  mine = await h.createDeployment("mine", { source_config: { resource_spec: { min_scale: 1 } } });

  // An administrator's objects in A1's namespace: one shared with A1, others shared with A2 only.
  const namespace = nsOf(h.ids.wsA1);
  const annotations = (workspaces: string) => ({ [SHARED_WITH_ANNOTATION]: workspaces });
  await h.cluster.core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: "shared-db", annotations: annotations(h.ids.wsA1) }, stringData: { pw: "x" } },
  });
  await h.cluster.core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: "a2-only", annotations: annotations(h.ids.wsA2) }, stringData: { pw: "x" } },
  });
  await h.cluster.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "settings" }, data: {} } });
  await h.cluster.core.createNamespacedServiceAccount({
    namespace,
    body: { metadata: { name: "agent-runner", annotations: annotations(h.ids.wsA1) } },
  });
  await h.cluster.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "privileged-ci" } } });
}, 60_000);
afterAll(() => h?.close());

interface Attack {
  name: string;
  method?: string;
  /** Defaults to create; `mine` / `victim` are replaced by those deployments' paths. */
  path?: string;
  body?: () => unknown;
  /** Sent verbatim instead of `body`. */
  raw?: () => string;
  headers?: () => Record<string, string>;
  status: number;
  /** For 422s: where the first issue must point. */
  loc?: (string | number)[];
}

const RS = ["body", "source_config", "resource_spec"];
const victimSecret = () => revisionSecretName(victim.id, victim.latest_revision_id);

const attacks: Attack[] = [
  // Another tenant's Secrets, however they are named
  {
    name: "secret_references to another deployment's Secret",
    body: () =>
      body({ secret_references: [{ name: "STOLEN", secret_name: victimSecret(), secret_key: "VICTIM_TOKEN" }] }),
    status: 422,
    loc: ["body", "secret_references", 0, "secret_name"],
  },
  {
    name: "secret_references to another organization's OAuth provider Secret",
    body: () =>
      body({
        secret_references: [
          { name: "STOLEN", secret_name: providerObjectName(h.ids.orgB, "b-idp"), secret_key: "client_secret" },
        ],
      }),
    status: 422,
    loc: ["body", "secret_references", 0, "secret_name"],
  },
  {
    name: "secret_references to a Secret shared with another workspace only",
    body: () => body({ secret_references: [{ name: "DB", secret_name: "a2-only", secret_key: "pw" }] }),
    status: 422,
    loc: ["body", "secret_references", 0, "secret_name"],
  },
  {
    name: "sidecar env valueFrom.secretKeyRef to another tenant's Secret",
    body: () =>
      withSpec({
        sidecars: [
          sidecar({ env: [{ name: "X", valueFrom: { secretKeyRef: { name: victimSecret(), key: "VICTIM_TOKEN" } } }] }),
        ],
      }),
    status: 422,
    loc: [...RS, "sidecars", 0, "env", 0, "valueFrom", "secretKeyRef", "name"],
  },
  {
    name: "init container envFrom of another tenant's Secret",
    body: () => withSpec({ init_containers: [sidecar({ envFrom: [{ secretRef: { name: victimSecret() } }] })] }),
    status: 422,
    loc: [...RS, "init_containers", 0, "envFrom", 0, "secretRef", "name"],
  },
  {
    name: "sidecar env from a ConfigMap nobody shared",
    body: () =>
      withSpec({
        sidecars: [sidecar({ env: [{ name: "X", valueFrom: { configMapKeyRef: { name: "settings", key: "a" } } }] })],
      }),
    status: 422,
    loc: [...RS, "sidecars", 0, "env", 0, "valueFrom", "configMapKeyRef", "name"],
  },
  {
    name: "secret volume of another tenant's Secret",
    body: () => withSpec({ volumes: [{ name: "loot", secret: { secretName: victimSecret() } }] }),
    status: 422,
    loc: [...RS, "volumes", 0, "secret", "secretName"],
  },
  {
    name: "projected secret source of another tenant's Secret",
    body: () =>
      withSpec({ volumes: [{ name: "loot", projected: { sources: [{ secret: { name: victimSecret() } }] } }] }),
    status: 422,
    loc: [...RS, "volumes", 0, "projected", "sources", 0, "secret", "name"],
  },
  {
    name: "image_pull_secrets of another tenant",
    body: () => withSpec({ image_pull_secrets: [{ name: victimSecret() }] }),
    status: 422,
    loc: [...RS, "image_pull_secrets", 0, "name"],
  },
  // The platform's identity
  {
    name: "service_account_name of the control plane",
    body: () => withSpec({ service_account_name: "ap-agentplane-control-plane" }),
    status: 422,
    loc: [...RS, "service_account_name"],
  },
  {
    name: "service_account_name not allow-listed for the workspace",
    body: () => withSpec({ service_account_name: "privileged-ci" }),
    status: 422,
    loc: [...RS, "service_account_name"],
  },
  {
    name: "projected serviceAccountToken volume",
    body: () =>
      withSpec({
        volumes: [
          { name: "token", projected: { sources: [{ serviceAccountToken: { path: "token", audience: "api" } }] } },
        ],
      }),
    status: 422,
    loc: [...RS, "volumes", 0, "projected", "sources", 0, "serviceAccountToken"],
  },
  // The node
  {
    name: "hostPath / volume",
    body: () => withSpec({ volumes: [{ name: "root", hostPath: { path: "/" } }] }),
    status: 422,
    loc: [...RS, "volumes", 0, "hostPath"],
  },
  {
    name: "privileged sidecar",
    body: () => withSpec({ sidecars: [sidecar({ securityContext: { privileged: true } })] }),
    status: 422,
    loc: [...RS, "sidecars", 0, "securityContext", "privileged"],
  },
  {
    name: "init container allowing privilege escalation",
    body: () => withSpec({ init_containers: [sidecar({ securityContext: { allowPrivilegeEscalation: true } })] }),
    status: 422,
    loc: [...RS, "init_containers", 0, "securityContext", "allowPrivilegeEscalation"],
  },
  {
    name: "sidecar adding SYS_ADMIN",
    body: () => withSpec({ sidecars: [sidecar({ securityContext: { capabilities: { add: ["SYS_ADMIN"] } } })] }),
    status: 422,
    loc: [...RS, "sidecars", 0, "securityContext", "capabilities", "add"],
  },
  {
    name: "sidecar running as root",
    body: () => withSpec({ sidecars: [sidecar({ securityContext: { runAsUser: 0 } })] }),
    status: 422,
    loc: [...RS, "sidecars", 0, "securityContext", "runAsUser"],
  },
  {
    name: "sidecar with runAsNonRoot false",
    body: () => withSpec({ sidecars: [sidecar({ securityContext: { runAsNonRoot: false } })] }),
    status: 422,
    loc: [...RS, "sidecars", 0, "securityContext", "runAsNonRoot"],
  },
  {
    name: "sidecar with an Unconfined seccomp profile",
    body: () => withSpec({ sidecars: [sidecar({ securityContext: { seccompProfile: { type: "Unconfined" } } })] }),
    status: 422,
    loc: [...RS, "sidecars", 0, "securityContext", "seccompProfile", "type"],
  },
  {
    name: "sidecar with a hostPort",
    body: () => withSpec({ sidecars: [sidecar({ ports: [{ containerPort: 80, hostPort: 80 }] })] }),
    status: 422,
    loc: [...RS, "sidecars", 0, "ports", 0, "hostPort"],
  },
  {
    name: "hostNetwork",
    body: () => withSpec({ hostNetwork: true }),
    status: 422,
    loc: [...RS, "hostNetwork"],
  },
  {
    name: "Bidirectional mount propagation",
    body: () =>
      withSpec({
        volumes: [{ name: "scratch", emptyDir: {} }],
        volume_mounts: [{ name: "scratch", mountPath: "/scratch", mountPropagation: "Bidirectional" }],
      }),
    status: 422,
    loc: [...RS, "volume_mounts", 0, "mountPropagation"],
  },
  {
    name: "probe aimed at another host",
    body: () => withSpec({ sidecars: [sidecar({ livenessProbe: { httpGet: { port: 80, host: "10.0.0.1" } } })] }),
    status: 422,
    loc: [...RS, "sidecars", 0, "livenessProbe", "httpGet", "host"],
  },
  {
    name: "Pod Security label on the pods",
    body: () => withSpec({ labels: { "pod-security.kubernetes.io/enforce": "privileged" } }),
    status: 422,
    loc: [...RS, "labels", "pod-security.kubernetes.io/enforce"],
  },
  {
    name: "AppArmor unconfined annotation",
    body: () => withSpec({ annotations: { "container.apparmor.security.beta.kubernetes.io/helper": "unconfined" } }),
    status: 422,
    loc: [...RS, "annotations", "container.apparmor.security.beta.kubernetes.io/helper"],
  },
  {
    name: "a volume named like the platform's API-key volume",
    body: () => withSpec({ volumes: [{ name: "agentplane-api-keys", emptyDir: {} }] }),
    status: 422,
    loc: [...RS, "volumes", 0, "name"],
  },
  // The agent server's own settings
  {
    name: "secrets planting AGENTPLANE_API_KEYS",
    body: () => body({ secrets: [{ name: "AGENTPLANE_API_KEYS", value: "attacker-key" }] }),
    status: 422,
    loc: ["body", "secrets", 0, "name"],
  },
  {
    name: "secrets overriding REDIS_URI",
    body: () => body({ secrets: [{ name: "REDIS_URI", value: "redis://victim-redis:6379" }] }),
    status: 422,
    loc: ["body", "secrets", 0, "name"],
  },
  {
    name: "secrets setting NODE_OPTIONS",
    body: () => body({ secrets: [{ name: "NODE_OPTIONS", value: "--require /tmp/x.js" }] }),
    status: 422,
    loc: ["body", "secrets", 0, "name"],
  },
  {
    name: "secret_references naming AGENTPLANE_API_KEYS_FILE",
    body: () =>
      body({ secret_references: [{ name: "AGENTPLANE_API_KEYS_FILE", secret_name: "shared-db", secret_key: "pw" }] }),
    status: 422,
    loc: ["body", "secret_references", 0, "name"],
  },
  // Namespaces
  {
    name: "k8s_namespace of another workspace",
    body: () => body({ source_config: { listener_config: { k8s_namespace: nsOf(h.ids.wsB) } } }),
    status: 422,
    loc: ["body", "source_config", "listener_config", "k8s_namespace"],
  },
  {
    name: "k8s_namespace of the platform's release",
    body: () => body({ source_config: { listener_config: { k8s_namespace: PROVIDERS_NAMESPACE } } }),
    status: 422,
    loc: ["body", "source_config", "listener_config", "k8s_namespace"],
  },
  // Deep and wide JSON where Kubernetes objects are free-form
  {
    name: "deeply nested JSON in volumes",
    raw: () => deep(withSpec({ volumes: [{ name: "deep", emptyDir: {}, extra: MARKER }] })),
    status: 422,
    loc: [...RS, "volumes", 0, "extra"],
  },
  {
    name: "deeply nested JSON in sidecars",
    raw: () => deep(withSpec({ sidecars: [sidecar({ lifecycle: MARKER })] })),
    status: 422,
    loc: [...RS, "sidecars", 0, "lifecycle"],
  },
  {
    name: "deeply nested JSON in init_containers' env",
    raw: () => deep(withSpec({ init_containers: [sidecar({ env: [{ name: "X", valueFrom: MARKER }] })] })),
    status: 422,
    loc: [...RS, "init_containers", 0, "env", 0, "valueFrom", "a"],
  },
  {
    name: "thousands of volumes",
    body: () => withSpec({ volumes: Array.from({ length: 5000 }, (_, i) => ({ name: `v${i}`, emptyDir: {} })) }),
    status: 422,
    loc: [...RS, "volumes"],
  },
  // PATCH and new revisions of one's own deployment
  {
    name: "PATCH: secrets PORT",
    method: "PATCH",
    path: "mine",
    body: () => ({ secrets: [{ name: "PORT", value: "1" }] }),
    status: 422,
    loc: ["body", "secrets", 0, "name"],
  },
  {
    name: "PATCH: privileged init container with hostPath",
    method: "PATCH",
    path: "mine",
    body: () => ({
      source_config: {
        resource_spec: {
          volumes: [{ name: "root", hostPath: { path: "/" } }],
          init_containers: [sidecar({ securityContext: { privileged: true } })],
        },
      },
    }),
    status: 422,
    loc: [...RS, "volumes", 0, "hostPath"],
  },
  {
    name: "PATCH: secret_references to another tenant's Secret",
    method: "PATCH",
    path: "mine",
    body: () => ({ secret_references: [{ name: "STOLEN", secret_name: victimSecret(), secret_key: "VICTIM_TOKEN" }] }),
    status: 422,
    loc: ["body", "secret_references", 0, "secret_name"],
  },
  {
    name: "new revision: projected serviceAccountToken",
    path: "mine/revisions",
    body: () => ({
      source_config: {
        resource_spec: { volumes: [{ name: "t", projected: { sources: [{ serviceAccountToken: { path: "t" } }] } }] },
      },
    }),
    status: 422,
    loc: [...RS, "volumes", 0, "projected", "sources", 0, "serviceAccountToken"],
  },
  // Another organization's deployment, and workspaces the key may not use
  {
    name: "PATCH another organization's deployment",
    method: "PATCH",
    path: "victim",
    body: () => ({ source_revision_config: { image_uri: "registry.example/evil:1" } }),
    status: 404,
  },
  {
    name: "new revision of another organization's deployment",
    path: "victim/revisions",
    body: () => ({}),
    status: 404,
  },
  {
    name: "redeploy another organization's revision",
    path: "victim/revisions/victim-revision/redeploy",
    status: 404,
  },
  { name: "DELETE another organization's deployment", method: "DELETE", path: "victim", status: 404 },
  {
    name: "create in another organization's workspace",
    body: () => body(),
    headers: () => ({ "x-tenant-id": h.ids.wsB }),
    status: 403,
  },
  {
    name: "create in a workspace of the organization the key may not use",
    body: () => body(),
    headers: () => ({ "x-tenant-id": h.ids.wsA2 }),
    status: 403,
  },
  {
    name: "PATCH another organization's deployment selecting its workspace",
    method: "PATCH",
    path: "victim",
    body: () => ({ secrets: [{ name: "A", value: "b" }] }),
    headers: () => ({ "x-tenant-id": h.ids.wsB }),
    status: 403,
  },
];

function pathOf(attack: Attack): string {
  const path = attack.path ?? "";
  const replaced = path
    .replace(/^mine/, mine.id)
    .replace(/^victim/, victim.id)
    .replace("victim-revision", victim.latest_revision_id);
  return `/v2/deployments${replaced ? `/${replaced}` : ""}`;
}

describe("attacks on other tenants and the platform", () => {
  it("has a table of at least 25 attacks", () => {
    expect(attacks.length).toBeGreaterThanOrEqual(25);
  });

  it.each(attacks)("$name → $status, nothing written", async (attack) => {
    const before = await clusterSnapshot(h.cluster);
    const res = await h.api(attack.method ?? "POST", pathOf(attack), {
      body: attack.body?.(),
      raw: attack.raw?.(),
      headers: attack.headers?.(),
    });
    expect(res.status, JSON.stringify(res.body).slice(0, 2000)).toBe(attack.status);
    if (attack.status === 422) {
      for (const issue of res.body.detail) {
        expect(issue).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
      }
      expect(res.body.detail[0].loc).toEqual(attack.loc);
    } else {
      expect(res.body).toEqual({ detail: expect.any(String) });
    }
    expect(await clusterSnapshot(h.cluster)).toEqual(before);
  });

  it("never echoes the victim's values", async () => {
    const res = await h.api("POST", "/v2/deployments", {
      body: body({ secret_references: [{ name: "S", secret_name: victimSecret(), secret_key: "VICTIM_TOKEN" }] }),
    });
    expect(JSON.stringify(res.body)).not.toContain("victim-secret");
  });
});

describe("what a tenant may do", () => {
  it("deploys into its own namespace, labelled for the restricted Pod Security Standard", async () => {
    const namespace = await h.cluster.core.readNamespace({ name: nsOf(h.ids.wsA1) });
    expect(namespace.metadata?.labels).toMatchObject({
      "pod-security.kubernetes.io/enforce": "restricted",
      "pod-security.kubernetes.io/warn": "restricted",
      "pod-security.kubernetes.io/audit": "restricted",
      "agentplane.dev/tenant-id": h.ids.wsA1,
    });
    expect(mine).toMatchObject({ source_config: { listener_config: { k8s_namespace: nsOf(h.ids.wsA1) } } });
    expect((await operator.deployment(nsOf(h.ids.wsB), victim.id)).spec.displayName).toBe("victim");
  });

  it("uses what an administrator shared with its workspace; sidecars get the restricted security context", async () => {
    const created = await h.api("POST", "/v2/deployments", {
      body: body({
        name: "allowed",
        secret_references: [{ name: "DB_PASSWORD", secret_name: "shared-db", secret_key: "pw" }],
        source_config: {
          resource_spec: {
            service_account_name: "agent-runner",
            volumes: [
              { name: "db", secret: { secretName: "shared-db" } },
              { name: "scratch", emptyDir: { sizeLimit: "64Mi" } },
            ],
            volume_mounts: [{ name: "db", mountPath: "/etc/db", readOnly: true }],
            sidecars: [
              sidecar({
                securityContext: { readOnlyRootFilesystem: true, capabilities: { drop: ["NET_RAW"] } },
                volumeMounts: [{ name: "scratch", mountPath: "/tmp" }],
              }),
            ],
          },
        },
      }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const cr = await operator.deployment(nsOf(h.ids.wsA1), created.body.id);
    expect(cr.spec.template.resources?.serviceAccountName).toBe("agent-runner");
    expect(cr.spec.template.resources?.sidecars?.[0]?.securityContext).toEqual({
      readOnlyRootFilesystem: true,
      privileged: false,
      allowPrivilegeEscalation: false,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL", "NET_RAW"] },
      seccompProfile: { type: "RuntimeDefault" },
    });
  });

  it("refuses an existing namespace of the tenant's name that the control plane did not create", async () => {
    const ids = h.ids;
    await h.cluster.core.createNamespace({ body: { metadata: { name: nsOf(ids.wsA2) } } });
    const res = await h.api("POST", "/v2/deployments", {
      body: body(),
      headers: { "x-api-key": ids.keys.multi, "x-tenant-id": ids.wsA2 },
    });
    expect(res.status).toBe(409);
    expect(res.body.detail).toMatch(/not created for this workspace/);
    expect(
      await h.cluster.custom.listNamespacedCustomObject({
        group: "agentplane.dev",
        version: "v1alpha1",
        plural: "agentdeployments",
        namespace: nsOf(ids.wsA2),
      }),
    ).toMatchObject({ items: [] });
  });
});
