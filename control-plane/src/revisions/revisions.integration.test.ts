import { CLEANUP_FINALIZER, revisionSecretName, SHARED_WITH_ANNOTATION } from "@agentplane/crds";
import { describe, expect, it } from "vitest";
import { type Harness } from "../testing/harness.ts";
import type { OperatorStandIn } from "../testing/operator-stand-in.ts";
import { useHarness } from "../testing/suite.ts";

/** Changing a deployment: patches, revisions and the two-phase delete. */

let h: Harness;
let operator: OperatorStandIn;
useHarness((started) => ({ h, operator } = started));

describe("patch and revisions", () => {
  it("creates a revision for a new image, resource_spec, secrets or secret references, and none otherwise", async () => {
    const d = await h.createDeployment("patch-me");
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
    const secretOf = (revisionId: string) =>
      h.cluster.core.readNamespacedSecret({ namespace: "agents", name: revisionSecretName(d.id, revisionId) });
    const stored = await secretOf(secrets.body.latest_revision_id);
    expect(Object.keys(stored.data ?? {})).toEqual(["NEW_SECRET"]);
    // Each revision keeps its own values: pods of the older one restart with what they started with.
    expect(Object.keys((await secretOf(image.body.latest_revision_id)).data ?? {})).toEqual(["OPENAI_API_KEY"]);
    expect((await operator.revision("agents", secrets.body.latest_revision_id)).spec.template.secretName).toBe(
      stored.metadata?.name,
    );

    const resources = await patch({ source_config: { resource_spec: { min_scale: 2, max_scale: 4, cpu: 0.5 } } });
    expect(resources.body.source_config.resource_spec).toMatchObject({ min_scale: 2, max_scale: 4, cpu: 0.5 });

    // An administrator shared the Secret with this workspace; only then may it be referenced.
    await h.cluster.core.createNamespacedSecret({
      namespace: "agents",
      body: { metadata: { name: "db", annotations: { [SHARED_WITH_ANNOTATION]: h.ids.wsA1 } }, data: {} },
    });
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
    const d = await h.createDeployment("immutable");
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
    const d = await h.createDeployment("revision-filter");
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
    const d = await h.createDeployment("redeploy-me");
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
    const a = await h.createDeployment("owner-a");
    const b = await h.createDeployment("owner-b");
    const res = await h.api("GET", `/v2/deployments/${b.id}/revisions/${a.latest_revision_id}`);
    expect(res).toEqual({ status: 404, body: { detail: `Revision ID ${a.latest_revision_id} not found.` } });
  });
});

describe("delete", () => {
  it("is two-phase: AWAITING_DELETE while the operator's finalizer holds the resource, then 404", async () => {
    const d = await h.createDeployment("delete-me");
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
      h.cluster.core
        .readNamespacedSecret({ namespace: "agents", name: revisionSecretName(d.id, d.latest_revision_id) })
        .then(
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
    const d = await h.createDeployment("force-me");
    await operator.setFinalizers("agents", d.id, [CLEANUP_FINALIZER]);
    expect((await h.api("DELETE", `/v2/deployments/${d.id}?force=true`)).status).toBe(400);
    expect((await h.api("DELETE", `/v2/deployments/${d.id}`)).status).toBe(204);
    expect((await h.api("DELETE", `/v2/deployments/${d.id}?force=true`)).status).toBe(204);
    expect((await h.api("GET", `/v2/deployments/${d.id}`)).status).toBe(404);
  });
});
