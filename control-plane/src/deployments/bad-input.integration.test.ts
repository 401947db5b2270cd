import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, countObjects, deploymentBody, expectRefusal, type Harness, startHarness } from "../testing/harness.ts";
import { cases } from "./testing/bad-input-table.ts";

let h: Harness;
let existing: { id: string; latest_revision_id: string };
let provider: unknown;
beforeAll(async () => {
  h = await startHarness();
  existing = (await h.api("POST", "/v2/deployments", { body: deploymentBody("existing") })).body;
  provider = (
    await h.api("POST", "/v2/auth/providers", {
      body: {
        provider_id: "p1",
        name: "P",
        client_id: "c",
        auth_url: "https://a.example/auth",
        token_url: "https://a.example/token",
      },
    })
  ).body;
});
afterAll(() => h?.close());

const dep = () => `/v2/deployments/${existing.id}`;

describe("bad input", () => {
  it("has a table of at least 30 malformed bodies and headers", () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });

  it.each(cases)("$name → $status, nothing written", async (c) => {
    const before = await countObjects(h.cluster);
    const path = (c.path ?? "/v2/deployments").replace(/^dep/, dep());
    const headers = Object.fromEntries(
      Object.entries({ "x-api-key": h.ids.keys.a1, ...c.headers }).filter(([, value]) => value !== undefined),
    );
    const res = await call(h.controlPlane.url, c.method ?? "POST", path, { body: c.body, raw: c.raw, headers });
    expectRefusal(res, c.status, c.loc);
    expect(await countObjects(h.cluster)).toBe(before);
  });

  it("left the existing deployment and provider untouched", async () => {
    const got = await h.api("GET", dep());
    expect(got.body).toMatchObject({
      name: "existing",
      latest_revision_id: existing.latest_revision_id,
      status: "AWAITING_DATABASE",
    });
    expect((await h.api("GET", `${dep()}/revisions`)).body.resources).toHaveLength(1);
    expect((await h.api("GET", "/v2/auth/providers/p1")).body).toEqual(provider);
  });
});
