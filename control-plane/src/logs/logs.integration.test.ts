import { beforeAll, describe, expect, it } from "vitest";
import { clusterSnapshot, expectRefusal, type Harness } from "../testing/harness.ts";
import type { OperatorStandIn } from "../testing/operator-stand-in.ts";
import { useHarness } from "../testing/suite.ts";

/**
 * The failure reason of a revision and the log endpoints' parameters, against the API test server
 * without pods (test/deploy-logs.test.ts reads real pods' logs through the operator and test kubelet).
 */
let h: Harness;
let operator: OperatorStandIn;
useHarness((started) => ({ h, operator } = started));

let d: { id: string; latest_revision_id: string };
const REASON = 'ImagePullBackOff: Back-off pulling image "registry.example/agent:1"';
// When the operator recorded the failure (after the revision was created, in whole seconds).
const FAILED_AT = new Date(Math.ceil(Date.now() / 1000) * 1000 + 60_000);
beforeAll(async () => {
  d = await h.createDeployment("failing");
  await operator.setRevisionStatus("agents", d.latest_revision_id, {
    revisionStatus: "DEPLOY_FAILED",
    message: REASON,
    conditions: [
      {
        type: "Ready",
        status: "False",
        reason: "ImagePullBackOff",
        message: REASON,
        lastTransitionTime: FAILED_AT.toISOString().replace(".000Z", "Z"),
      },
    ],
  });
});
const revisionLogs = (query: string) =>
  h.api("GET", `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/logs?${query}`);

describe("failure reason", () => {
  it("is the revision's status_message, null while nothing went wrong", async () => {
    const failed = await h.api("GET", `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}`);
    expect(failed.body).toMatchObject({ status: "DEPLOY_FAILED", status_message: REASON });
    const listed = (await h.api("GET", `/v2/deployments/${d.id}/revisions`)).body.resources[0];
    expect(listed.status_message).toBe(REASON);
    const fresh = await h.createDeployment("healthy");
    const pending = (await h.api("GET", `/v2/deployments/${fresh.id}/revisions/${fresh.latest_revision_id}`)).body;
    expect(pending).toMatchObject({ status: "AWAITING_DEPLOY", status_message: null });
  });

  it("opens the revision's deploy log, which has no pod output when the image never ran", async () => {
    const entry = {
      id: `revision:${d.latest_revision_id}`,
      timestamp: FAILED_AT.toISOString(),
      level: "ERROR",
      message: REASON,
      pod_name: null,
      revision_id: d.latest_revision_id,
      run_id: null,
    };
    expect(await revisionLogs("type=deploy")).toEqual({ status: 200, body: { logs: [entry], next_offset: null } });
    expect((await revisionLogs("type=deploy&level=CRITICAL")).body.logs).toEqual([]);
    expect((await revisionLogs("type=deploy&query=imagepull")).body.logs).toEqual([entry]);
    const later = new Date(FAILED_AT.getTime() + 1000).toISOString();
    expect((await revisionLogs(`type=deploy&start_time=${later}`)).body.logs).toEqual([]);
    expect((await revisionLogs(`type=deploy&end_time=${FAILED_AT.toISOString()}`)).body.logs).toEqual([]);
    expect((await revisionLogs(`type=deploy&end_time=${later}`)).body.logs).toEqual([entry]);
    const all = await h.api("GET", `/v2/deployment-logs?deployment_id=${d.id}`);
    expect(all).toEqual({ status: 200, body: { items: [entry], next_cursor: null } });
  });

  it("leaves build logs empty: images are built outside this platform", async () => {
    expect(await revisionLogs("type=build")).toEqual({ status: 200, body: { logs: [], next_offset: null } });
    expect((await h.api("GET", `/v2/deployment-logs?deployment_id=${d.id}&log_type=BUILD`)).body).toEqual({
      items: [],
      next_cursor: null,
    });
  });

  it("is another workspace's business only: 404 for its deployments and revisions", async () => {
    const asB = { headers: { "x-api-key": h.ids.keys.b } };
    const paths = [
      `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/logs?type=deploy`,
      `/v2/deployment-logs?deployment_id=${d.id}`,
      `/v2/deployment-logs?deployment_id=${d.id}&revision_id=${d.latest_revision_id}`,
    ];
    for (const path of paths) {
      expect(await h.api("GET", path, asB)).toEqual({
        status: 404,
        body: { detail: `Deployment ID ${d.id} not found.` },
      });
    }
    // A revision of another deployment of the same workspace is unknown to this one.
    const other = await h.createDeployment("other");
    const crossed = await h.api(
      "GET",
      `/v2/deployment-logs?deployment_id=${other.id}&revision_id=${d.latest_revision_id}`,
    );
    expect(crossed.status).toBe(404);
  });
});

describe("bad input", () => {
  const rev = () => `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/logs`;
  const cases: { name: string; path: () => string; status: number; loc?: unknown[] }[] = [
    { name: "revision logs without type", path: () => rev(), status: 422, loc: ["query", "type"] },
    {
      name: "revision logs of an unknown type",
      path: () => `${rev()}?type=runtime`,
      status: 422,
      loc: ["query", "type"],
    },
    { name: "limit 0", path: () => `${rev()}?type=deploy&limit=0`, status: 422, loc: ["query", "limit"] },
    { name: "limit 1001", path: () => `${rev()}?type=deploy&limit=1001`, status: 422, loc: ["query", "limit"] },
    { name: "limit not a number", path: () => `${rev()}?type=deploy&limit=ten`, status: 422, loc: ["query", "limit"] },
    { name: "unknown order", path: () => `${rev()}?type=deploy&order=newest`, status: 422, loc: ["query", "order"] },
    { name: "unknown level", path: () => `${rev()}?type=deploy&level=warn`, status: 422, loc: ["query", "level"] },
    {
      name: "start_time not a date-time",
      path: () => `${rev()}?type=deploy&start_time=yesterday`,
      status: 422,
      loc: ["query", "start_time"],
    },
    {
      name: "end_time without time",
      path: () => `${rev()}?type=deploy&end_time=2026-01-01`,
      status: 422,
      loc: ["query", "end_time"],
    },
    {
      name: "offset not a cursor",
      path: () => `${rev()}?type=deploy&offset=abc`,
      status: 422,
      loc: ["query", "offset"],
    },
    {
      name: "offset not a cursor (build)",
      path: () => `${rev()}?type=build&offset=abc`,
      status: 422,
      loc: ["query", "offset"],
    },
    {
      name: "query as an object",
      path: () => `${rev()}?type=deploy&query[x]=1`,
      status: 422,
      loc: ["query", "query"],
    },
    {
      name: "revision id not a UUID",
      path: () => `/v2/deployments/${d.id}/revisions/r1/logs?type=deploy`,
      status: 422,
      loc: ["path", "revision_id"],
    },
    {
      name: "unknown revision",
      path: () => `/v2/deployments/${d.id}/revisions/${crypto.randomUUID()}/logs?type=deploy`,
      status: 404,
    },
    {
      name: "unknown deployment",
      path: () => `/v2/deployments/${crypto.randomUUID()}/revisions/${d.latest_revision_id}/logs?type=deploy`,
      status: 404,
    },
    {
      name: "deployment-logs without deployment_id",
      path: () => "/v2/deployment-logs",
      status: 422,
      loc: ["query", "deployment_id"],
    },
    {
      name: "deployment-logs deployment_id not a UUID",
      path: () => "/v2/deployment-logs?deployment_id=x",
      status: 422,
      loc: ["query", "deployment_id"],
    },
    {
      name: "deployment-logs revision_id not a UUID",
      path: () => `/v2/deployment-logs?deployment_id=${d.id}&revision_id=x`,
      status: 422,
      loc: ["query", "revision_id"],
    },
    {
      name: "deployment-logs lower-case log_type",
      path: () => `/v2/deployment-logs?deployment_id=${d.id}&log_type=deploy`,
      status: 422,
      loc: ["query", "log_type"],
    },
    {
      name: "deployment-logs page_size 101",
      path: () => `/v2/deployment-logs?deployment_id=${d.id}&page_size=101`,
      status: 422,
      loc: ["query", "page_size"],
    },
    {
      name: "deployment-logs unknown sort_order",
      path: () => `/v2/deployment-logs?deployment_id=${d.id}&sort_order=up`,
      status: 422,
      loc: ["query", "sort_order"],
    },
    {
      name: "deployment-logs cursor not a cursor",
      path: () => `/v2/deployment-logs?deployment_id=${d.id}&cursor=${Buffer.from("[1]").toString("base64url")}`,
      status: 422,
      loc: ["query", "cursor"],
    },
    {
      name: "deployment-logs unknown deployment",
      path: () => `/v2/deployment-logs?deployment_id=${crypto.randomUUID()}`,
      status: 404,
    },
  ];

  it.each(cases)("$name → $status, nothing written", async (c) => {
    const before = await clusterSnapshot(h.cluster);
    const res = await h.api("GET", c.path());
    expectRefusal(res, c.status, c.loc);
    expect(await clusterSnapshot(h.cluster)).toEqual(before);
  });
});
