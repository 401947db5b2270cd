import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer } from "../graphs/testing/server.ts";
import type { AgentServer } from "../server.ts";

/** A project whose `authenticate` tells back what it was handed, with `auth.authenticate_docs` set. */
const project = new URL("./testing/request-project/langgraph.json", import.meta.url).pathname;

describe("what authenticate is handed, and which paths it guards", () => {
  let server: AgentServer;

  beforeAll(async () => {
    server = await startTestServer(project);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
  });

  const get = (path: string, token?: string) =>
    fetch(`${server.url}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

  it("gets the request's method, full URL and headers, as on the reference", async () => {
    const client = new Client({
      apiUrl: server.url,
      defaultHeaders: { authorization: "Bearer carol", "x-probe": "sent" },
      callerOptions: { maxRetries: 0 },
    });
    const thread = await client.threads.create({ metadata: { topic: "t" } });
    expect(thread.metadata).toEqual({
      topic: "t",
      received: { method: "POST", url: `${server.url}/threads`, probe: "sent" },
    });
    const response = await fetch(`${server.url}/threads?source=raw`, {
      method: "POST",
      body: "{}",
      headers: { "content-type": "application/json", authorization: "Bearer carol" },
    });
    const created = (await response.json()) as { metadata: { received: unknown } };
    expect(created.metadata.received).toEqual({
      method: "POST",
      url: `${server.url}/threads?source=raw`,
      probe: null,
    });
  });

  it("with auth.authenticate_docs, guards the API reference and its document like the API", async () => {
    for (const path of ["/docs", "/openapi.json"]) {
      const anonymous = await get(path);
      expect(anonymous.status, path).toBe(401);
      expect(await anonymous.json()).toEqual({ detail: "No token" });
      expect((await get(path, "carol")).status, path).toBe(200);
    }
  });

  it("leaves the health check and server info public whatever the settings", async () => {
    for (const path of ["/ok", "/info"]) expect((await get(path)).status, path).toBe(200);
  });
});
