import { hashApiKey } from "@agentplane/common";
import { deploymentApiKeysSecretName, revisionSecretName } from "@agentplane/crds";
import { describe, expect, it } from "vitest";
import { freePort } from "../../../testing/redis-server.ts";
import { startControlPlane } from "../app.ts";
import {
  apiKeyHashesOf,
  call,
  controlPlaneConfig,
  deploymentBody,
  type Harness,
  kubeconfigVia,
} from "../testing/harness.ts";
import type { OperatorStandIn } from "../testing/operator-stand-in.ts";
import { useHarness } from "../testing/suite.ts";

let h: Harness;
let operator: OperatorStandIn;
useHarness((started) => ({ h, operator } = started));

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
    const created = await h.createDeployment("create-me");
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

    const revision = await operator.revision("agents", created.latest_revision_id);
    // The revision's own immutable Secret, owned by the revision (and so, through it, by the deployment).
    const secret = await h.cluster.core.readNamespacedSecret({
      namespace: "agents",
      name: revisionSecretName(created.id, created.latest_revision_id),
    });
    expect(revision.spec.template.secretName).toBe(secret.metadata?.name);
    expect(cr.spec.template.secretName).toBe(secret.metadata?.name);
    expect(Buffer.from(secret.data?.OPENAI_API_KEY ?? "", "base64").toString()).toBe("sk-test");
    expect(secret.immutable).toBe(true);
    expect(secret.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: "AgentRevision",
      name: created.latest_revision_id,
      uid: revision.metadata.uid,
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

    expect(revision.status?.revisionStatus).toBe("AWAITING_DEPLOY");
    expect(revision.metadata.ownerReferences?.[0]).toMatchObject({ name: created.id, controller: true });
    expect(revision.spec).toMatchObject({
      deploymentId: created.id,
      sourceRevisionConfig: { image_uri: "registry.example/agent:1" },
    });

    const got = await h.api("GET", `/v2/deployments/${created.id}`);
    expect(got).toEqual({ status: 200, body: created });
  });

  it("uses the first configured namespace by default and refuses unmanaged namespaces with 422", async () => {
    const created = await h.createDeployment("default-ns", { source_config: {} });
    expect(created.source_config.listener_config.k8s_namespace).toBe("agents");
    const res = await h.api("POST", "/v2/deployments", {
      body: deploymentBody("elsewhere", { source_config: { listener_config: { k8s_namespace: "kube-system" } } }),
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({
      loc: ["body", "source_config", "listener_config", "k8s_namespace"],
      msg: "deployments of this workspace may go to 'agents', 'team-b' only",
    });
    const other = await h.createDeployment("team-b-ns", {
      source_config: { listener_config: { k8s_namespace: "team-b" } },
    });
    expect((await h.api("GET", `/v2/deployments/${other.id}`)).body.source_config.listener_config.k8s_namespace).toBe(
      "team-b",
    );
  });

  it("refuses a duplicate name in the workspace with 409, also under concurrency, but not across workspaces", async () => {
    await h.createDeployment("taken");
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
    for (const name of names) created.push(await h.createDeployment(name));
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
    const created = await h.createDeployment("status-flow");
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
    const template = await h.createDeployment("template");
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
    const d = await h.createDeployment("private");
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
