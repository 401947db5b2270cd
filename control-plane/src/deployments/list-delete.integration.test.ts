import { CLEANUP_FINALIZER } from "@agentplane/crds";
import { describe, expect, it } from "vitest";
import { clusterSnapshot, deploymentBody, expectRefusal, type Harness } from "../testing/harness.ts";
import type { OperatorStandIn } from "../testing/operator-stand-in.ts";
import { useHarness } from "../testing/suite.ts";

/** GET /v2/deployments filters by id and the fields this control plane lacks; bulk DELETE /v2/deployments. */
let h: Harness;
let operator: OperatorStandIn;
useHarness((started) => ({ h, operator } = started));

const idsOf = (res: { body: { resources: { id: string }[] } }) => res.body.resources.map((d) => d.id).sort();

describe("list filters", () => {
  it("filters by deployment_ids, comma-separated or repeated, and combines it with the other filters", async () => {
    const [a, b, c] = [
      await h.createDeployment("ids-a"),
      await h.createDeployment("ids-b"),
      await h.createDeployment("ids-c"),
    ];
    const other = (
      await h.api("POST", "/v2/deployments", {
        body: deploymentBody("ids-b-other"),
        headers: { "x-api-key": h.ids.keys.b },
      })
    ).body;
    const list = (query: string) => h.api("GET", `/v2/deployments?${query}`);
    expect(idsOf(await list(`deployment_ids=${a.id},${c.id}`))).toEqual([a.id, c.id].sort());
    expect(idsOf(await list(`deployment_ids=${a.id}&deployment_ids=${b.id}`))).toEqual([a.id, b.id].sort());
    expect(idsOf(await list(`deployment_ids=${a.id.toUpperCase()}`))).toEqual([a.id]);
    // Another workspace's id is as absent as an unknown one.
    expect(idsOf(await list(`deployment_ids=${other.id},${crypto.randomUUID()}`))).toEqual([]);
    expect(idsOf(await list(`deployment_ids=${a.id},${b.id}&name=ids-b`))).toEqual([b.id]);
    expect(idsOf(await list("deployment_ids=&name_contains=ids-"))).toEqual([a.id, b.id, c.id].sort());
    expect((await list(`deployment_ids=${a.id},${b.id},${c.id}&limit=2`)).body.offset).toBe(2);
  });

  it("matches nothing on a deployment type, image version, tag or remote listener, which no deployment here has", async () => {
    const d = await h.createDeployment("no-cloud-fields");
    const list = (query: string) => h.api("GET", `/v2/deployments?name=no-cloud-fields&${query}`);
    expect(idsOf(await list(""))).toEqual([d.id]);
    expect(idsOf(await list("remote_reconciled=false"))).toEqual([d.id]);
    for (const query of [
      "deployment_type=prod",
      "deployment_type=dev_free",
      "image_version=0.2.0",
      `tag_value_ids=${crypto.randomUUID()}`,
      "remote_reconciled=true",
    ]) {
      expect(await list(query), query).toEqual({ status: 200, body: { resources: [], offset: 0 } });
    }
    // An empty tag list is no filter.
    expect(idsOf(await list("tag_value_ids="))).toEqual([d.id]);
    const revisions = (query: string) => h.api("GET", `/v2/deployments/${d.id}/revisions?${query}`);
    expect((await revisions("remote_reconciled=false")).body.resources).toHaveLength(1);
    expect((await revisions("remote_reconciled=true")).body).toEqual({ resources: [], offset: 0 });
    expect((await h.api("GET", `/v2/deployments/${crypto.randomUUID()}/revisions?remote_reconciled=true`)).status).toBe(
      404,
    );
  });
});

describe("bulk delete", () => {
  it("starts the deletion of every listed deployment: 200 with the ids", async () => {
    const a = await h.createDeployment("bulk-a");
    const b = await h.createDeployment("bulk-b");
    const keep = await h.createDeployment("bulk-keep");
    await operator.setFinalizers("agents", a.id, [CLEANUP_FINALIZER]);
    const res = await h.api(
      "DELETE",
      `/v2/deployments?deployment_ids=${a.id}&deployment_ids=${b.id}&deployment_ids=${a.id}`,
    );
    expect(res).toEqual({ status: 200, body: { deleted: [a.id, b.id], failed: [] } });
    // Two-phase like a single DELETE: the finalizer holds `a` (AWAITING_DELETE), `b` is gone.
    expect((await h.api("GET", `/v2/deployments/${a.id}`)).body.status).toBe("AWAITING_DELETE");
    expect((await h.api("GET", `/v2/deployments/${b.id}`)).status).toBe(404);
    expect((await h.api("GET", `/v2/deployments/${keep.id}`)).status).toBe(200);
    // Again on one awaiting deletion: still a success, as a repeated single DELETE is.
    expect((await h.api("DELETE", `/v2/deployments?deployment_ids=${a.id}`)).status).toBe(200);
  });

  it("answers 207 on partial success, naming each failure, and leaves other workspaces' deployments alone", async () => {
    const mine = await h.createDeployment("bulk-partial");
    const theirs = (
      await h.api("POST", "/v2/deployments", {
        body: deploymentBody("bulk-theirs"),
        headers: { "x-api-key": h.ids.keys.b },
      })
    ).body;
    const unknown = crypto.randomUUID();
    const res = await h.api("DELETE", `/v2/deployments?deployment_ids=${mine.id},${theirs.id},${unknown}`);
    expect(res).toEqual({
      status: 207,
      body: {
        deleted: [mine.id],
        failed: [
          { deployment_id: theirs.id, status: 404, detail: `Deployment ID ${theirs.id} not found.` },
          { deployment_id: unknown, status: 404, detail: `Deployment ID ${unknown} not found.` },
        ],
      },
    });
    expect(
      (await h.api("GET", `/v2/deployments/${theirs.id}`, { headers: { "x-api-key": h.ids.keys.b } })).status,
    ).toBe(200);
  });

  it("answers 404 when none of the ids is a deployment of the workspace", async () => {
    const unknown = crypto.randomUUID();
    const before = await clusterSnapshot(h.cluster);
    expect(await h.api("DELETE", `/v2/deployments?deployment_ids=${unknown}`)).toEqual({
      status: 404,
      body: { detail: `Deployment IDs ${unknown} not found.` },
    });
    expect(await clusterSnapshot(h.cluster)).toEqual(before);
  });
});

describe("bad input", () => {
  const ids = (n: number) => Array.from({ length: n }, () => `deployment_ids=${crypto.randomUUID()}`).join("&");
  const cases: { name: string; method: string; path: string; loc: unknown[] }[] = [
    {
      name: "list: deployment_ids not UUIDs",
      method: "GET",
      path: "/v2/deployments?deployment_ids=a,b",
      loc: ["query", "deployment_ids", 0],
    },
    {
      name: "list: one of the deployment_ids not a UUID",
      method: "GET",
      path: `/v2/deployments?deployment_ids=${crypto.randomUUID()},nope`,
      loc: ["query", "deployment_ids", 1],
    },
    {
      name: "list: unknown deployment_type",
      method: "GET",
      path: "/v2/deployments?deployment_type=serverless",
      loc: ["query", "deployment_type"],
    },
    {
      name: "list: tag_value_ids not UUIDs",
      method: "GET",
      path: "/v2/deployments?tag_value_ids=red",
      loc: ["query", "tag_value_ids", 0],
    },
    {
      name: "list: remote_reconciled not a boolean",
      method: "GET",
      path: "/v2/deployments?remote_reconciled=maybe",
      loc: ["query", "remote_reconciled"],
    },
    {
      name: "list: image_version as an object",
      method: "GET",
      path: "/v2/deployments?image_version[a]=1",
      loc: ["query", "image_version"],
    },
    { name: "list: unknown status", method: "GET", path: "/v2/deployments?status=RUNNING", loc: ["query", "status"] },
    {
      name: "revisions: remote_reconciled not a boolean",
      method: "GET",
      path: `/v2/deployments/${crypto.randomUUID()}/revisions?remote_reconciled=2`,
      loc: ["query", "remote_reconciled"],
    },
    {
      name: "bulk delete: no deployment_ids",
      method: "DELETE",
      path: "/v2/deployments",
      loc: ["query", "deployment_ids"],
    },
    {
      name: "bulk delete: empty deployment_ids",
      method: "DELETE",
      path: "/v2/deployments?deployment_ids=",
      loc: ["query", "deployment_ids"],
    },
    {
      name: "bulk delete: not a UUID",
      method: "DELETE",
      path: "/v2/deployments?deployment_ids=x",
      loc: ["query", "deployment_ids", 0],
    },
    {
      name: "bulk delete: 101 ids",
      method: "DELETE",
      path: `/v2/deployments?${ids(101)}`,
      loc: ["query", "deployment_ids"],
    },
  ];

  it.each(cases)("$name → 422 naming the field, nothing written", async (c) => {
    const before = await clusterSnapshot(h.cluster);
    const res = await h.api(c.method, c.path);
    expectRefusal(res, 422, c.loc);
    expect(await clusterSnapshot(h.cluster)).toEqual(before);
  });

  it("accepts 100 ids in one bulk delete", async () => {
    const res = await h.api("DELETE", `/v2/deployments?${ids(100)}`);
    expect(res.status).toBe(404);
  });
});
