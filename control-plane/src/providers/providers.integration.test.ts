import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../testing/harness.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

describe("OAuth providers", () => {
  const provider = {
    provider_id: "github",
    name: "GitHub",
    client_id: "client-1",
    client_secret: "shh-very-secret",
    auth_url: "https://github.com/login/oauth/authorize",
    token_url: "https://github.com/login/oauth/access_token",
  };

  it("creates with the documented defaults, stores client_secret in a Secret and never returns it", async () => {
    const created = await h.api("POST", "/v2/auth/providers", { body: provider });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      organization_id: h.ids.orgA,
      provider_id: "github",
      uses_pkce: false,
      code_challenge_method: "S256",
      token_endpoint_auth_method: "client_secret_post",
      provider_type: null,
      is_dynamic_client: false,
    });
    for (const field of [
      "id",
      "name",
      "client_id",
      "auth_url",
      "token_url",
      "created_at",
      "updated_at",
      "mcp_server_url",
    ]) {
      expect(created.body).toHaveProperty(field);
    }
    expect(JSON.stringify(created.body)).not.toContain("shh-very-secret");
    expect(created.body).not.toHaveProperty("client_secret");

    const secrets = await h.cluster.core.listNamespacedSecret({ namespace: "agentplane" });
    const stored = secrets.items.find((s) => s.metadata?.labels?.["agentplane.dev/organization-id"] === h.ids.orgA);
    expect(Buffer.from(stored?.data?.client_secret ?? "", "base64").toString()).toBe("shh-very-secret");
    const maps = await h.cluster.core.listNamespacedConfigMap({ namespace: "agentplane" });
    expect(JSON.stringify(maps.items)).not.toContain("shh-very-secret");

    expect((await h.api("POST", "/v2/auth/providers", { body: provider })).status).toBe(409);
    const list = await h.api("GET", "/v2/auth/providers");
    expect(list.body).toEqual([created.body]);
    expect((await h.api("GET", "/v2/auth/providers/github")).body).toEqual(created.body);
  });

  it("patches, is organization-scoped, and deletes", async () => {
    await h.api("POST", "/v2/auth/providers", {
      body: { ...provider, provider_id: "slack-1", provider_type: "slack" },
    });
    const patched = await h.api("PATCH", "/v2/auth/providers/slack-1", {
      body: { name: "Slack", uses_pkce: true, client_secret: "rotated-secret", token_url: null },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      name: "Slack",
      uses_pkce: true,
      provider_type: "slack",
      token_url: provider.token_url,
    });
    expect(JSON.stringify(patched.body)).not.toContain("rotated-secret");

    // the multi-workspace key of the same organization needs no workspace for org-scoped providers
    const sameOrg = await h.api("GET", "/v2/auth/providers/slack-1", { headers: { "x-api-key": h.ids.keys.multi } });
    expect(sameOrg.status).toBe(200);
    const asB = { headers: { "x-api-key": h.ids.keys.b } };
    expect((await h.api("GET", "/v2/auth/providers/slack-1", asB)).status).toBe(404);
    expect((await h.api("PATCH", "/v2/auth/providers/slack-1", { ...asB, body: { name: "x" } })).status).toBe(404);
    expect((await h.api("DELETE", "/v2/auth/providers/slack-1", asB)).status).toBe(404);
    expect((await h.api("GET", "/v2/auth/providers", asB)).body).toEqual([]);

    expect(await h.api("DELETE", "/v2/auth/providers/slack-1")).toEqual({ status: 200, body: {} });
    expect((await h.api("GET", "/v2/auth/providers/slack-1")).status).toBe(404);
    expect((await h.api("DELETE", "/v2/auth/providers/slack-1")).status).toBe(404);
  });
});
