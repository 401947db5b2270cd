import { describe, expect, it } from "vitest";
import {
  clusterSnapshot,
  deploymentBody,
  type Harness,
  listenerBody,
  PROVIDERS_NAMESPACE,
} from "../testing/harness.ts";
import { useHarness } from "../testing/suite.ts";
import { LABEL_LISTENER_ID } from "./store.ts";

/** Listeners: the local one every workspace has, registered ones, and deployments bound to them. */
let h: Harness;
useHarness((started) => ({ h } = started));

const noKey = { headers: { "x-api-key": "" } };
const asWorkspaceB = () => ({ headers: { "x-api-key": h.ids.keys.b } });
const asWorkspaceA2 = () => ({ headers: { "x-api-key": h.ids.keys.multi, "x-tenant-id": h.ids.wsA2 } });

async function localListener(options = {}) {
  const list = await h.api("GET", "/v2/listeners", options);
  expect(list.status).toBe(200);
  return list.body.resources[0];
}

describe("listeners", () => {
  it("gives every workspace a local listener with the namespaces it may deploy into", async () => {
    const local = await localListener();
    expect(local).toEqual({
      id: expect.any(String),
      compute_type: "k8s",
      compute_id: "local",
      compute_config: { k8s_namespaces: ["agents", "team-b"] },
      version: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect((await h.api("GET", `/v2/listeners/${local.id}`)).body).toEqual(local);
    // The same id on every read (it is derived, not stored), another one in another workspace.
    expect((await localListener()).id).toBe(local.id);
    const other = await localListener(asWorkspaceB());
    expect(other.id).not.toBe(local.id);
    expect((await h.api("GET", `/v2/listeners/${local.id}`, asWorkspaceB())).status).toBe(404);
    // It follows the configuration: neither changed nor deleted through the API.
    for (const [method, body] of [
      ["PATCH", { version: "2" }],
      ["DELETE", undefined],
    ] as const) {
      const res = await h.api(method, `/v2/listeners/${local.id}`, { body });
      expect(res.status).toBe(400);
      expect(res.body.detail).toMatch(/local cluster/);
    }
  });

  it("creates, lists, patches and deletes a registered listener, one ConfigMap in the control plane's namespace", async () => {
    const created = await h.api("POST", "/v2/listeners", { body: { ...listenerBody("edge-1"), version: "0.1.0" } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      compute_type: "k8s",
      compute_id: "edge-1",
      compute_config: { k8s_namespaces: ["apps"] },
      version: "0.1.0",
    });
    const { id } = created.body;
    const stored = await h.cluster.core.listNamespacedConfigMap({
      namespace: PROVIDERS_NAMESPACE,
      labelSelector: `${LABEL_LISTENER_ID}=${id}`,
    });
    expect(stored.items).toHaveLength(1);
    expect((await h.api("GET", `/v2/listeners/${id}`)).body).toEqual(created.body);

    const list = (await h.api("GET", "/v2/listeners")).body;
    expect(list.resources.map((l: { compute_id: string }) => l.compute_id)).toEqual(["local", "edge-1"]);
    expect(list.offset).toBe(2);
    expect((await h.api("GET", "/v2/listeners?limit=1&offset=1")).body).toEqual({
      resources: [created.body],
      offset: 2,
    });

    const patched = await h.api("PATCH", `/v2/listeners/${id}`, {
      body: { compute_config: { k8s_namespaces: ["apps", "jobs"] } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ compute_config: { k8s_namespaces: ["apps", "jobs"] }, version: "0.1.0" });
    expect(patched.body.updated_at >= created.body.updated_at).toBe(true);
    expect((await h.api("PATCH", `/v2/listeners/${id}`, { body: { version: "0.2.0" } })).body).toMatchObject({
      compute_config: { k8s_namespaces: ["apps", "jobs"] },
      version: "0.2.0",
    });

    expect((await h.api("DELETE", `/v2/listeners/${id}`)).status).toBe(204);
    expect(await h.api("GET", `/v2/listeners/${id}`)).toEqual({
      status: 404,
      body: { detail: `Listener ID ${id} not found.` },
    });
    expect((await h.api("DELETE", `/v2/listeners/${id}`)).status).toBe(404);
    expect(
      (
        await h.cluster.core.listNamespacedConfigMap({
          namespace: PROVIDERS_NAMESPACE,
          labelSelector: `${LABEL_LISTENER_ID}=${id}`,
        })
      ).items,
    ).toHaveLength(0);
  });

  it("keeps compute_id unique per workspace (409, also under concurrency), not across workspaces", async () => {
    const results = await Promise.all(
      [1, 2, 3].map(() => h.api("POST", "/v2/listeners", { body: listenerBody("twin") })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    expect(results.find((r) => r.status === 409)?.body).toEqual({
      detail: `Listener for LangSmith workspace ID '${h.ids.wsA1}' and compute ID 'twin' already exists.`,
    });
    expect((await h.api("POST", "/v2/listeners", { body: listenerBody("local") })).status).toBe(409);
    expect((await h.api("POST", "/v2/listeners", { body: listenerBody("twin"), ...asWorkspaceA2() })).status).toBe(201);
  });

  it("shows a workspace neither another's listeners nor lets it change them", async () => {
    const mine = (await h.api("POST", "/v2/listeners", { body: listenerBody("private-a") })).body;
    for (const options of [asWorkspaceB(), asWorkspaceA2()]) {
      const ids = (await h.api("GET", "/v2/listeners?limit=100", options)).body.resources.map(
        (l: { id: string }) => l.id,
      );
      expect(ids).not.toContain(mine.id);
      expect((await h.api("GET", `/v2/listeners/${mine.id}`, options)).status).toBe(404);
      expect((await h.api("PATCH", `/v2/listeners/${mine.id}`, { body: { version: "x" }, ...options })).status).toBe(
        404,
      );
      expect((await h.api("DELETE", `/v2/listeners/${mine.id}`, options)).status).toBe(404);
    }
    expect((await h.api("GET", `/v2/listeners/${mine.id}`)).body).toEqual(mine);
    // A key for two workspaces must say which one it speaks for.
    expect((await h.api("GET", "/v2/listeners", { headers: { "x-api-key": h.ids.keys.multi } })).status).toBe(403);
    expect((await h.api("GET", "/v2/listeners", noKey)).status).toBe(401);
  });
});

describe("deployments and listeners", () => {
  it("binds a deployment to the local listener when none is named, and accepts it by id", async () => {
    const local = await localListener();
    const implicit = await h.createDeployment("on-local");
    expect(implicit.source_config.listener_id).toBe(local.id);
    const explicit = await h.createDeployment("on-local-explicit", {
      source_config: { listener_id: local.id, listener_config: { k8s_namespace: "team-b" } },
    });
    expect(explicit.source_config).toMatchObject({
      listener_id: local.id,
      listener_config: { k8s_namespace: "team-b" },
    });
    // Naming the same listener again on PATCH is no change.
    const patch = await h.api("PATCH", `/v2/deployments/${explicit.id}`, {
      body: { source_config: { listener_id: local.id } },
    });
    expect(patch.status).toBe(200);
  });

  it("puts deployments created before listeners existed (none stored) on the local listener", async () => {
    const local = await localListener();
    const d = await h.createDeployment("before-listeners");
    const ref = {
      group: "agentplane.dev",
      version: "v1alpha1",
      plural: "agentdeployments",
      namespace: "agents",
      name: d.id,
    };
    const stored = (await h.cluster.custom.getNamespacedCustomObject(ref)) as {
      spec: { sourceConfig: Record<string, unknown> };
    };
    stored.spec.sourceConfig = { custom_url: null };
    await h.cluster.custom.replaceNamespacedCustomObject({ ...ref, body: stored });
    const patched = await h.api("PATCH", `/v2/deployments/${d.id}`, {
      body: { source_config: { listener_id: local.id } },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.source_config.listener_id).toBe(local.id);
  });

  it("refuses unknown listeners, other workspaces' listeners and listeners nothing reconciles, writing nothing", async () => {
    const remote = (await h.api("POST", "/v2/listeners", { body: listenerBody("remote-1") })).body;
    const othersLocal = await localListener(asWorkspaceB());
    const othersRegistered = (
      await h.api("POST", "/v2/listeners", { body: listenerBody("b-cluster"), ...asWorkspaceB() })
    ).body;
    const before = await clusterSnapshot(h.cluster);
    for (const listenerId of [crypto.randomUUID(), othersLocal.id, othersRegistered.id]) {
      const res = await h.api("POST", "/v2/deployments", {
        body: deploymentBody(`bad-listener-${listenerId}`, {
          source_config: { listener_id: listenerId, listener_config: { k8s_namespace: "agents" } },
        }),
      });
      expect(res).toEqual({
        status: 422,
        body: {
          detail: [
            {
              loc: ["body", "source_config", "listener_id"],
              msg: `Listener ID ${listenerId} not found.`,
              type: "value_error",
            },
          ],
        },
      });
    }
    const unreconciled = await h.api("POST", "/v2/deployments", {
      body: deploymentBody("on-remote", { source_config: { listener_id: remote.id } }),
    });
    expect(unreconciled.status).toBe(400);
    expect(unreconciled.body.detail).toMatch(/remote-1/);
    expect(await clusterSnapshot(h.cluster)).toEqual(before);
  });
});

describe("OpenAPI", () => {
  it("documents the listener, bulk-delete and log operations and the new list parameters", async () => {
    const { body: doc } = await h.api("GET", "/openapi.json");
    const op = (path: string, method: string) => doc.paths[path]?.[method];
    const params = (path: string, method: string) =>
      (op(path, method)?.parameters ?? []).map((p: { name: string; in: string }) => `${p.in}:${p.name}`).sort();
    expect(op("/v2/listeners", "get").operationId).toBe("list_listeners_v2_listeners_get");
    expect(Object.keys(op("/v2/listeners", "post").responses)).toEqual(expect.arrayContaining(["201", "409", "422"]));
    for (const method of ["get", "patch", "delete"]) {
      expect(op("/v2/listeners/{listener_id}", method)?.operationId).toMatch(/_listener_v2_listeners__listener_id__/);
    }
    expect(params("/v2/deployments", "get")).toEqual(
      expect.arrayContaining([
        "query:deployment_ids",
        "query:deployment_type",
        "query:image_version",
        "query:tag_value_ids",
        "query:remote_reconciled",
      ]),
    );
    const bulk = op("/v2/deployments", "delete");
    expect(bulk.operationId).toBe("delete_deployments_v2_deployments_delete");
    expect(Object.keys(bulk.responses).sort()).toEqual(["200", "207", "404", "422"]);
    expect(bulk.responses["207"].content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/BulkDeleteResponse",
    });
    expect(params("/v2/deployments/{deployment_id}/revisions/{revision_id}/logs", "get")).toEqual([
      "path:deployment_id",
      "path:revision_id",
      "query:end_time",
      "query:level",
      "query:limit",
      "query:offset",
      "query:order",
      "query:query",
      "query:run_id",
      "query:start_time",
      "query:type",
    ]);
    expect(params("/v2/deployment-logs", "get")).toEqual(
      expect.arrayContaining([
        "query:deployment_id",
        "query:revision_id",
        "query:log_type",
        "query:cursor",
        "query:page_size",
      ]),
    );
    expect(Object.keys(doc.components.schemas.Revision.properties)).toContain("status_message");
    expect(doc.components.schemas).toHaveProperty("Listener");
    expect(doc.components.schemas).toHaveProperty("LogsResponse");
  });
});
