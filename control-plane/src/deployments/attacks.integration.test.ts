import { SHARED_WITH_ANNOTATION } from "@agentplane/crds";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, clusterSnapshot, expectRefusal, type Harness, startHarness, TENANT_PREFIX } from "../testing/harness.ts";
import { OperatorStandIn } from "../testing/operator-stand-in.ts";
import {
  type Attack,
  attackTable,
  body,
  type Created,
  nsOf,
  sidecar,
  victimSecret,
  type World,
} from "./testing/attacks-table.ts";

/**
 * Issue #15: what an attacker holding an ordinary API key of one organization (workspace A1) tries
 * against another tenant (organization B) and against the platform. Each request is refused with the
 * right 4xx and leaves every object in the cluster as it was. Tenants get their own namespaces
 * (the default layout).
 */

let h: Harness;
let operator: OperatorStandIn;
let victim: Created;
let mine: Created;
const world = {} as World;
const attacks = attackTable(world);

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
  Object.assign(world, { h, victim });
}, 60_000);
afterAll(() => h?.close());

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
    expectRefusal(res, attack.status, attack.loc);
    expect(await clusterSnapshot(h.cluster)).toEqual(before);
  });

  it("never echoes the victim's values", async () => {
    const res = await h.api("POST", "/v2/deployments", {
      body: body({ secret_references: [{ name: "S", secret_name: victimSecret(world), secret_key: "VICTIM_TOKEN" }] }),
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
