import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, call, deploymentBody, type Harness, startHarness } from "../testing/harness.ts";

let h: Harness;
let deploymentId: string;
beforeAll(async () => {
  h = await startHarness();
  const created = await h.api("POST", "/v2/deployments", { body: deploymentBody("auth-target") });
  deploymentId = created.body.id;
});
afterAll(() => h?.close());

const get = (path: string, headers: Record<string, string>) => call(h.controlPlane.url, "GET", path, { headers });

describe("authentication matrix", () => {
  it("answers 401 without valid credentials on every protected route, and serves public routes without", async () => {
    const expired = await bearer({ organization_id: h.ids.orgA, workspace_ids: [h.ids.wsA1] }, undefined, "-1m");
    const forged = await bearer(
      { organization_id: h.ids.orgA, workspace_ids: [h.ids.wsA1] },
      "some-other-secret-that-is-long-enough",
    );
    const invalid: Record<string, string>[] = [
      {},
      { "x-api-key": "" },
      { "x-api-key": "wrong-key" },
      { "x-api-key": h.ids.keys.a1.toUpperCase() },
      { authorization: "Bearer not-a-jwt" },
      { authorization: `Bearer ${expired}` },
      { authorization: `Bearer ${forged}` },
      { authorization: `Basic ${Buffer.from("a:b").toString("base64")}` },
      { "x-tenant-id": h.ids.wsA1 },
      // a valid bearer token does not rescue an invalid API key
      {
        "x-api-key": "wrong-key",
        authorization: `Bearer ${await bearer({ organization_id: h.ids.orgA, workspace_ids: [h.ids.wsA1] })}`,
      },
    ];
    const routes = [
      "/v2/deployments",
      `/v2/deployments/${deploymentId}`,
      `/v2/deployments/${deploymentId}/revisions`,
      "/v2/auth/providers",
      "/api-host/v2/deployments",
    ];
    for (const headers of invalid) {
      for (const path of routes) {
        const res = await get(path, headers);
        expect(res.status, `${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(typeof res.body.detail).toBe("string");
      }
    }
    const post = await call(h.controlPlane.url, "POST", "/v2/deployments", { body: deploymentBody("anon") });
    expect(post.status).toBe(401);
    for (const path of ["/ok", "/openapi.json", "/docs", "/api-host/ok"]) {
      expect((await get(path, {})).status, path).toBe(200);
    }
  });

  it("selects the workspace with X-Tenant-Id (case-insensitive), required for multi-workspace keys", async () => {
    const { keys, wsA1, wsA2, wsB } = h.ids;
    const cases: [Record<string, string>, number][] = [
      [{ "x-api-key": keys.a1 }, 200],
      [{ "x-api-key": keys.a1, "x-tenant-id": wsA1 }, 200],
      [{ "x-api-key": keys.a1, "X-TENANT-ID": wsA1.toUpperCase() }, 200],
      [{ "x-api-key": keys.a1, "x-tenant-id": wsA2 }, 403],
      [{ "x-api-key": keys.a1, "x-tenant-id": wsB }, 403],
      [{ "x-api-key": keys.multi }, 403],
      [{ "x-api-key": keys.multi, "x-tenant-id": wsA1 }, 200],
      [{ "x-api-key": keys.multi, "x-tenant-id": wsA2 }, 200],
      [{ "x-api-key": keys.multi, "x-tenant-id": wsB }, 403],
      [{ "x-api-key": keys.b }, 200],
      [{ "x-api-key": keys.b, "x-tenant-id": wsA1 }, 403],
      [{ "x-api-key": keys.a1, "x-tenant-id": "not-a-uuid" }, 422],
    ];
    for (const [headers, status] of cases) {
      const res = await get("/v2/deployments", headers);
      expect(res.status, JSON.stringify(headers)).toBe(status);
    }
    const ambiguous = await get("/v2/deployments", { "x-api-key": keys.multi });
    expect(ambiguous.body.detail).toMatch(/requires workspace specification/);
    const malformed = await get("/v2/deployments", { "x-api-key": keys.a1, "x-tenant-id": "nope" });
    expect(malformed.body.detail[0]).toMatchObject({ loc: ["header", "x-tenant-id"], type: "uuid_parsing" });
  });

  it("accepts bearer JWTs naming the organization and workspaces, with the same workspace rules", async () => {
    const { orgA, orgB, wsA1, wsA2, wsB } = h.ids;
    const single = await bearer({ organization_id: orgA, workspace_ids: [wsA1] });
    const both = await bearer({ organization_id: orgA, workspace_ids: [wsA1, wsA2] });
    const other = await bearer({ organization_id: orgB, workspace_ids: wsB });
    const cases: [Record<string, string>, number][] = [
      [{ authorization: `Bearer ${single}` }, 200],
      [{ authorization: `bearer ${single}` }, 200],
      [{ authorization: `Bearer ${both}` }, 403],
      [{ authorization: `Bearer ${both}`, "x-tenant-id": wsA2 }, 200],
      [{ authorization: `Bearer ${single}`, "x-tenant-id": wsA2 }, 403],
      [{ authorization: `Bearer ${other}` }, 200],
    ];
    for (const [headers, status] of cases) {
      expect((await get("/v2/deployments", headers)).status, JSON.stringify(headers)).toBe(status);
    }
    const mine = await get(`/v2/deployments/${deploymentId}`, { authorization: `Bearer ${single}` });
    expect(mine.body.id).toBe(deploymentId);
    expect((await get(`/v2/deployments/${deploymentId}`, { authorization: `Bearer ${other}` })).status).toBe(404);
    const noOrg = await bearer({ workspace_ids: [wsA1] });
    expect((await get("/v2/deployments", { authorization: `Bearer ${noOrg}` })).status).toBe(401);
  });

  it("never echoes credentials in error bodies", async () => {
    const res = await get("/v2/deployments", { "x-api-key": "leaky-secret-key-value" });
    expect(JSON.stringify(res.body)).not.toContain("leaky-secret-key-value");
  });
});
