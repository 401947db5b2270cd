import { hashApiKey } from "@agentplane/common";
import { CLEANUP_FINALIZER, deploymentApiKeysSecretName, deploymentSecretName } from "@agentplane/crds";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane } from "../control-plane/src/app.ts";
import {
  apiKeyHashesOf,
  call,
  controlPlaneConfig,
  deploymentBody,
  type Harness,
  kubeconfigVia,
  startHarness,
} from "../control-plane/src/testing/harness.ts";
import { OperatorStandIn } from "../control-plane/src/testing/operator-stand-in.ts";
import { freePort } from "./support/redis-server.ts";

let h: Harness;
let operator: OperatorStandIn;
beforeAll(async () => {
  h = await startHarness();
  operator = new OperatorStandIn(h.cluster.custom);
});
afterAll(() => h?.close());

const createDeployment = async (name: string, overrides: Record<string, unknown> = {}) => {
  const res = await h.api("POST", "/v2/deployments", { body: deploymentBody(name, overrides) });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
};

describe("service endpoints", () => {
  it("serves /ok, /docs and an OpenAPI 0.1.0 document with the three security schemes, unauthenticated", async () => {
    expect(await call(h.controlPlane.url, "GET", "/ok")).toEqual({ status: 200, body: { ok: true } });
    const docs = await call(h.controlPlane.url, "GET", "/docs");
    expect(docs.status).toBe(200);
    expect(docs.body).toContain("swagger-ui");
    const { status, body: spec } = await call(h.controlPlane.url, "GET", "/openapi.json");
    expect(status).toBe(200);
    expect(spec.info.version).toBe("0.1.0");
    expect(Object.keys(spec.components.securitySchemes).sort()).toEqual(["API Key", "Bearer Auth", "Tenant ID"]);
    const operations = Object.values(spec.paths).flatMap((path) => Object.values(path as object));
    const ids = operations.map((op) => op.operationId);
    expect(ids).toEqual(
      expect.arrayContaining([
        "list_deployments_v2_deployments_get",
        "create_deployment_v2_deployments_post",
        "get_deployment_v2_deployments__deployment_id__get",
        "patch_deployment_v2_deployments__deployment_id__patch",
        "delete_deployment_v2_deployments__deployment_id__delete",
        "list_revisions_v2_deployments__deployment_id__revisions_get",
        "get_revision_v2_deployments__deployment_id__revisions__revision_id__get",
        "redeploy_revision_v2_deployments__deployment_id__revisions__revision_id__redeploy_post",
        "create_oauth_provider_v2_auth_providers_post",
        "list_oauth_providers_v2_auth_providers_get",
      ]),
    );
    const create = spec.paths["/v2/deployments"].post;
    expect(create.tags).toEqual(["Deployments (v2)"]);
    expect(create.security).toEqual([{ "API Key": [] }, { "Tenant ID": [] }, { "Bearer Auth": [] }]);
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(["201", "400", "409", "422"]));
    expect(spec.paths["/v2/auth/providers"].post.tags).toEqual(["Auth Service (v2)"]);
  });

  it("serves the same API under /api-host", async () => {
    const res = await call(h.controlPlane.url, "GET", "/api-host/v2/deployments", {
      headers: { "x-api-key": h.ids.keys.a1 },
    });
    expect(res.status).toBe(200);
    expect((await call(h.controlPlane.url, "GET", "/api-host/ok")).status).toBe(200);
  });
});

describe("deployments", () => {
  it("creates an AgentDeployment, its Secret and a first AgentRevision awaiting deploy", async () => {
    const created = await createDeployment("create-me");
    expect(created).toMatchObject({
      name: "create-me",
      tenant_id: h.ids.wsA1,
      source: "external_docker",
      status: "AWAITING_DATABASE",
      secrets: [{ name: "OPENAI_API_KEY", value: "sk-test" }],
      source_revision_config: { image_uri: "registry.example/agent:1" },
      source_config: {
        listener_config: { k8s_namespace: "agents" },
        resource_spec: { min_scale: 1, max_scale: 2, cpu: 0.5 },
      },
      active_revision_id: null,
      url: null,
    });
    expect(created.latest_revision_id).toMatch(/^[0-9a-f-]{36}$/);

    const cr = await operator.deployment("agents", created.id);
    expect(cr.metadata.labels).toMatchObject({
      "agentplane.dev/tenant-id": h.ids.wsA1,
      "agentplane.dev/deployment-id": created.id,
    });
    expect(cr.spec).toMatchObject({
      displayName: "create-me",
      revisionName: created.latest_revision_id,
      template: { image: "registry.example/agent:1" },
    });
    expect(JSON.stringify(cr)).not.toContain("sk-test");

    const secret = await h.cluster.core.readNamespacedSecret({
      namespace: "agents",
      name: deploymentSecretName(created.id),
    });
    expect(Buffer.from(secret.data?.OPENAI_API_KEY ?? "", "base64").toString()).toBe("sk-test");
    expect(secret.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: "AgentDeployment",
      name: created.id,
      uid: cr.metadata.uid,
    });

    // The agent server accepts the keys that may use this workspace (a1 and multi), never B's.
    expect(cr.spec.apiKeysSecretName).toBe(deploymentApiKeysSecretName(created.id));
    expect(await apiKeyHashesOf(h.cluster, created.id)).toEqual(
      [hashApiKey(h.ids.keys.a1), hashApiKey(h.ids.keys.multi)].sort(),
    );
    const keysSecret = await h.cluster.core.readNamespacedSecret({
      namespace: "agents",
      name: deploymentApiKeysSecretName(created.id),
    });
    expect(keysSecret.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: "AgentDeployment",
      name: created.id,
      uid: cr.metadata.uid,
      controller: true,
    });
    for (const grant of h.ids.grants) expect(JSON.stringify(created)).not.toContain(grant.hash);

    const revision = await operator.revision("agents", created.latest_revision_id);
    expect(revision.status?.revisionStatus).toBe("AWAITING_DEPLOY");
    expect(revision.metadata.ownerReferences?.[0]).toMatchObject({ name: created.id, controller: true });
    expect(revision.spec).toMatchObject({
      deploymentId: created.id,
      sourceRevisionConfig: { image_uri: "registry.example/agent:1" },
    });

    const got = await h.api("GET", `/v2/deployments/${created.id}`);
    expect(got).toEqual({ status: 200, body: created });
  });

  it("uses the first configured namespace by default and refuses unmanaged namespaces", async () => {
    const created = await createDeployment("default-ns", { source_config: {} });
    expect(created.source_config.listener_config.k8s_namespace).toBe("agents");
    const res = await h.api("POST", "/v2/deployments", {
      body: deploymentBody("elsewhere", { source_config: { listener_config: { k8s_namespace: "kube-system" } } }),
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/not managed/);
    const other = await createDeployment("team-b-ns", {
      source_config: { listener_config: { k8s_namespace: "team-b" } },
    });
    expect((await h.api("GET", `/v2/deployments/${other.id}`)).body.source_config.listener_config.k8s_namespace).toBe(
      "team-b",
    );
  });

  it("refuses a duplicate name in the workspace with 409, also under concurrency, but not across workspaces", async () => {
    await createDeployment("taken");
    const dup = await h.api("POST", "/v2/deployments", { body: deploymentBody("taken") });
    expect(dup).toEqual({ status: 409, body: { detail: "A deployment named 'taken' already exists." } });
    const other = await h.api("POST", "/v2/deployments", {
      body: deploymentBody("taken"),
      headers: { "x-api-key": h.ids.keys.b },
    });
    expect(other.status).toBe(201);

    const racing = await Promise.all(
      Array.from({ length: 5 }, () => h.api("POST", "/v2/deployments", { body: deploymentBody("race") })),
    );
    expect(racing.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
    const listed = await h.api("GET", "/v2/deployments?name=race");
    expect(listed.body.resources.filter((d: { status: string }) => d.status !== "AWAITING_DELETE")).toHaveLength(1);
  });

  it("lists newest first with limit/offset (next offset), name_contains, name and status filters", async () => {
    const names = ["page-a", "page-b", "page-c"];
    const created = [];
    for (const name of names) created.push(await createDeployment(name));
    const first = await h.api("GET", "/v2/deployments?name_contains=PAGE-&limit=2");
    expect(first.status).toBe(200);
    expect(first.body.resources.map((d: { name: string }) => d.name)).toEqual(["page-c", "page-b"]);
    expect(first.body.offset).toBe(2);
    const second = await h.api("GET", "/v2/deployments?name_contains=page-&limit=2&offset=2");
    expect(second.body).toMatchObject({
      offset: 3,
      resources: [{ name: "page-a", secrets: [{ name: "OPENAI_API_KEY" }] }],
    });
    expect((await h.api("GET", "/v2/deployments?name=page-b")).body.resources).toHaveLength(1);

    await operator.setDeploymentStatus("agents", created[0].id, { deploymentStatus: "READY" });
    const ready = await h.api("GET", "/v2/deployments?status=READY&name_contains=page-");
    expect(ready.body.resources.map((d: { id: string }) => d.id)).toEqual([created[0].id]);
    const other = await h.api("GET", "/v2/deployments?name_contains=page-", { headers: { "x-api-key": h.ids.keys.b } });
    expect(other.body).toEqual({ resources: [], offset: 0 });
  });

  it("reflects the operator's status: READY, active revision and URL", async () => {
    const created = await createDeployment("status-flow");
    await operator.setRevisionStatus("agents", created.latest_revision_id, { revisionStatus: "DEPLOYED" });
    await operator.setDeploymentStatus("agents", created.id, {
      deploymentStatus: "READY",
      latestReadyRevision: created.latest_revision_id,
      url: "http://status-flow.agents.svc:8000",
    });
    const got = (await h.api("GET", `/v2/deployments/${created.id}`)).body;
    expect(got).toMatchObject({
      status: "READY",
      active_revision_id: created.latest_revision_id,
      url: "http://status-flow.agents.svc:8000",
    });
    const revision = await h.api("GET", `/v2/deployments/${created.id}/revisions/${created.latest_revision_id}`);
    expect(revision.body).toMatchObject({
      id: created.latest_revision_id,
      status: "DEPLOYED",
      source: "external_docker",
    });
  });
});

describe("patch and revisions", () => {
  it("creates a revision for a new image, resource_spec, secrets or secret references, and none otherwise", async () => {
    const d = await createDeployment("patch-me");
    const patch = (body: unknown) => h.api("PATCH", `/v2/deployments/${d.id}`, { body });

    const urlOnly = await patch({ source_config: { custom_url: "https://agent.example" }, secrets: [] });
    expect(urlOnly.status).toBe(200);
    expect(urlOnly.body).toMatchObject({
      latest_revision_id: d.latest_revision_id,
      source_config: { custom_url: "https://agent.example" },
    });
    expect(urlOnly.body.secrets).toEqual(d.secrets);

    const image = await patch({ source_revision_config: { image_uri: "registry.example/agent:2" } });
    expect(image.status).toBe(200);
    expect(image.body.latest_revision_id).not.toBe(d.latest_revision_id);
    expect(image.body.source_revision_config.image_uri).toBe("registry.example/agent:2");

    const secrets = await patch({ secrets: [{ name: "NEW_SECRET", value: "v2" }] });
    expect(secrets.body.secrets).toEqual([{ name: "NEW_SECRET", value: "v2" }]);
    const stored = await h.cluster.core.readNamespacedSecret({ namespace: "agents", name: deploymentSecretName(d.id) });
    expect(Object.keys(stored.data ?? {})).toEqual(["NEW_SECRET"]);

    const resources = await patch({ source_config: { resource_spec: { min_scale: 2, max_scale: 4 } } });
    expect(resources.body.source_config.resource_spec).toMatchObject({ min_scale: 2, max_scale: 4, cpu: null });

    const refs = await patch({ secret_references: [{ name: "DB_PASSWORD", secret_name: "db", secret_key: "pw" }] });
    expect(refs.body.secret_references).toEqual([{ name: "DB_PASSWORD", secret_name: "db", secret_key: "pw" }]);

    const revisions = (await h.api("GET", `/v2/deployments/${d.id}/revisions`)).body;
    expect(revisions.resources).toHaveLength(5);
    expect(revisions.offset).toBe(5);
    expect(revisions.resources[0].id).toBe(refs.body.latest_revision_id);
    expect(revisions.resources.at(-1).id).toBe(d.latest_revision_id);
    expect(
      revisions.resources.map(
        (r: { source_revision_config: { image_uri: string } }) => r.source_revision_config.image_uri,
      ),
    ).toEqual([
      "registry.example/agent:2",
      "registry.example/agent:2",
      "registry.example/agent:2",
      "registry.example/agent:2",
      "registry.example/agent:1",
    ]);
    const newest = await operator.revision("agents", refs.body.latest_revision_id);
    const oldest = await operator.revision("agents", d.latest_revision_id);
    expect(newest.spec.secretsChecksum).not.toBe(oldest.spec.secretsChecksum);
    expect(newest.spec.template.resources).toMatchObject({ minScale: 2, maxScale: 4 });
  });

  it("refuses changes to immutable fields with 400 and leaves the deployment unchanged", async () => {
    const d = await createDeployment("immutable");
    for (const body of [
      { name: "renamed" },
      { source: "github" },
      { revision_source: "internal_docker" },
      { source_config: { listener_config: { k8s_namespace: "team-b" } } },
    ]) {
      const res = await h.api("PATCH", `/v2/deployments/${d.id}`, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(typeof res.body.detail).toBe("string");
    }
    expect((await h.api("GET", `/v2/deployments/${d.id}`)).body).toEqual(d);
  });

  it("filters revisions by comma-separated status and pages them", async () => {
    const d = await createDeployment("revision-filter");
    const second = (
      await h.api("PATCH", `/v2/deployments/${d.id}`, { body: { source_revision_config: { image_uri: "img:2" } } })
    ).body;
    await operator.setRevisionStatus("agents", d.latest_revision_id, { revisionStatus: "SKIPPED" });
    await operator.setRevisionStatus("agents", second.latest_revision_id, { revisionStatus: "DEPLOYING" });
    const list = (q: string) => h.api("GET", `/v2/deployments/${d.id}/revisions${q}`);
    expect((await list("?status=SKIPPED")).body.resources.map((r: { id: string }) => r.id)).toEqual([
      d.latest_revision_id,
    ]);
    expect((await list("?status=SKIPPED,DEPLOYING")).body.resources).toHaveLength(2);
    expect((await list("?status=DEPLOYED")).body).toEqual({ resources: [], offset: 0 });
    expect((await list("?limit=1&offset=1")).body).toMatchObject({
      offset: 2,
      resources: [{ id: d.latest_revision_id }],
    });
  });

  it("creates a revision with POST .../revisions and redeploys an older one as a new revision", async () => {
    const d = await createDeployment("redeploy-me");
    const created = await h.api("POST", `/v2/deployments/${d.id}/revisions`, {
      body: { source_revision_config: { image_uri: "img:3" } },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: "AWAITING_DEPLOY", source_revision_config: { image_uri: "img:3" } });
    const empty = await h.api("POST", `/v2/deployments/${d.id}/revisions`, { body: {} });
    expect(empty.status).toBe(201);
    expect(empty.body.source_revision_config.image_uri).toBe("img:3");

    const redeployed = await h.api("POST", `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/redeploy`);
    expect(redeployed.status).toBe(200);
    expect(redeployed.body.source_revision_config.image_uri).toBe("registry.example/agent:1");
    expect([d.latest_revision_id, created.body.id, empty.body.id]).not.toContain(redeployed.body.latest_revision_id);
    const newest = (await h.api("GET", `/v2/deployments/${d.id}/revisions?limit=1`)).body.resources[0];
    expect(newest).toMatchObject({
      id: redeployed.body.latest_revision_id,
      source_revision_config: { image_uri: "registry.example/agent:1" },
    });

    const unknown = await h.api("POST", `/v2/deployments/${d.id}/revisions/${crypto.randomUUID()}/redeploy`);
    expect(unknown.status).toBe(404);
  });

  it("keeps revisions of one deployment out of another's", async () => {
    const a = await createDeployment("owner-a");
    const b = await createDeployment("owner-b");
    const res = await h.api("GET", `/v2/deployments/${b.id}/revisions/${a.latest_revision_id}`);
    expect(res).toEqual({ status: 404, body: { detail: `Revision ID ${a.latest_revision_id} not found.` } });
  });
});

describe("delete", () => {
  it("is two-phase: AWAITING_DELETE while the operator's finalizer holds the resource, then 404", async () => {
    const d = await createDeployment("delete-me");
    await operator.setFinalizers("agents", d.id, [CLEANUP_FINALIZER]);
    const deleted = await h.api("DELETE", `/v2/deployments/${d.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBeUndefined();
    expect((await h.api("GET", `/v2/deployments/${d.id}`)).body.status).toBe("AWAITING_DELETE");
    expect((await h.api("GET", "/v2/deployments?status=AWAITING_DELETE&name=delete-me")).body.resources).toHaveLength(
      1,
    );
    expect(
      (await h.api("PATCH", `/v2/deployments/${d.id}`, { body: { source_revision_config: { image_uri: "x:1" } } }))
        .status,
    ).toBe(400);
    expect((await h.api("DELETE", `/v2/deployments/${d.id}`)).status).toBe(204);

    await operator.setFinalizers("agents", d.id, []);
    expect(await h.api("GET", `/v2/deployments/${d.id}`)).toEqual({
      status: 404,
      body: { detail: `Deployment ID ${d.id} not found.` },
    });
    expect((await h.api("DELETE", `/v2/deployments/${d.id}`)).status).toBe(404);
    // its Secret and revisions are owned by it, so the garbage collector removes them
    const secretGone = () =>
      h.cluster.core.readNamespacedSecret({ namespace: "agents", name: deploymentSecretName(d.id) }).then(
        () => false,
        () => true,
      );
    await expect.poll(secretGone).toBe(true);
    await expect
      .poll(() =>
        operator.revision("agents", d.latest_revision_id).then(
          () => false,
          () => true,
        ),
      )
      .toBe(true);
  });

  it("allows force only after a soft delete, and then drops the finalizer", async () => {
    const d = await createDeployment("force-me");
    await operator.setFinalizers("agents", d.id, [CLEANUP_FINALIZER]);
    expect((await h.api("DELETE", `/v2/deployments/${d.id}?force=true`)).status).toBe(400);
    expect((await h.api("DELETE", `/v2/deployments/${d.id}`)).status).toBe(204);
    expect((await h.api("DELETE", `/v2/deployments/${d.id}?force=true`)).status).toBe(204);
    expect((await h.api("GET", `/v2/deployments/${d.id}`)).status).toBe(404);
  });
});

describe("Kubernetes API unreachable", () => {
  it("answers 503 with a JSON detail, and keeps serving /ok", async () => {
    const dead = kubeconfigVia(h.cluster.kubeconfigPath, `http://127.0.0.1:${await freePort()}`);
    const orphan = await startControlPlane(controlPlaneConfig(dead, h.ids));
    try {
      const res = await call(orphan.url, "GET", "/v2/deployments", { headers: { "x-api-key": h.ids.keys.a1 } });
      expect(res).toEqual({ status: 503, body: { detail: "The Kubernetes API is unreachable; please retry." } });
      expect((await call(orphan.url, "GET", "/ok")).status).toBe(200);
    } finally {
      await orphan.close();
    }
  });
});

describe("read cache", () => {
  it("serves objects written by others (another replica, the operator) once the watch delivers them", async () => {
    const template = await createDeployment("template");
    const cr = await operator.deployment("agents", template.id);
    const id = crypto.randomUUID();
    await h.cluster.custom.createNamespacedCustomObject({
      group: "agentplane.dev",
      version: "v1alpha1",
      plural: "agentdeployments",
      namespace: "agents",
      body: {
        ...cr,
        metadata: {
          name: id,
          labels: { ...cr.metadata.labels, "agentplane.dev/deployment-id": id },
          annotations: cr.metadata.annotations,
        },
        spec: { ...cr.spec, displayName: "from-another-replica" },
      },
    });
    // a GET by id falls back to the API server when the cache does not know the object yet
    expect((await h.api("GET", `/v2/deployments/${id}`)).body).toMatchObject({ id, name: "from-another-replica" });
    await expect
      .poll(async () => (await h.api("GET", "/v2/deployments?name=from-another-replica")).body.resources.length)
      .toBe(1);
    await operator.setDeploymentStatus("agents", id, { deploymentStatus: "READY", url: "http://elsewhere:8000" });
    await expect
      .poll(async () => (await h.api("GET", "/v2/deployments?name=from-another-replica")).body.resources[0]?.url)
      .toBe("http://elsewhere:8000");
  });
});

describe("tenancy", () => {
  it("answers 404 for another workspace's deployment on every route", async () => {
    const d = await createDeployment("private");
    const asB = { headers: { "x-api-key": h.ids.keys.b } };
    const paths: [string, string, unknown?][] = [
      ["GET", `/v2/deployments/${d.id}`],
      ["PATCH", `/v2/deployments/${d.id}`, { source_revision_config: { image_uri: "evil:1" } }],
      ["DELETE", `/v2/deployments/${d.id}`],
      ["GET", `/v2/deployments/${d.id}/revisions`],
      ["GET", `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}`],
      ["POST", `/v2/deployments/${d.id}/revisions`, {}],
      ["POST", `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/redeploy`],
    ];
    for (const [method, path, body] of paths) {
      const res = await h.api(method, path, { ...asB, body });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    const sameOrgOtherWorkspace = await h.api("GET", `/v2/deployments/${d.id}`, {
      headers: { "x-api-key": h.ids.keys.multi, "x-tenant-id": h.ids.wsA2 },
    });
    expect(sameOrgOtherWorkspace.status).toBe(404);
    expect((await h.api("GET", `/v2/deployments/${d.id}`)).body).toEqual(d);
  });
});
