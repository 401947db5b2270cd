import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../testing/redis.ts";
import { exampleConfig, startTestServer } from "./graphs/testing/server.ts";
import type { AgentServer } from "./server.ts";

const KEY = "test-secret-key";
let server: AgentServer;

beforeAll(async () => {
  server = await startTestServer(exampleConfig, {
    redisUrl: testRedisUrl(),
    prefix: uniquePrefix("app"),
    env: { AGENTPLANE_API_KEYS: KEY },
  });
});
afterAll(() => server?.close());

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${server.url}${path}`, { headers });

describe("API keys", () => {
  it("leave health checks and docs open and require a matching X-Api-Key everywhere else", async () => {
    expect(await (await get("/ok")).json()).toEqual({ ok: true });
    expect((await get("/docs")).status).toBe(200);
    expect((await get("/docs/assets/swagger-ui.css")).status).toBe(200);
    expect((await get("/openapi.json")).status).toBe(200);
    for (const headers of [{}, { "x-api-key": "wrong" }] as Record<string, string>[]) {
      const res = await get("/info", headers);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ detail: "Missing or invalid API key" });
    }
    expect((await get("/info", { "x-api-key": KEY })).status).toBe(200);
    const sdk = new Client({ apiUrl: server.url, apiKey: KEY });
    expect((await sdk.assistants.search({ graphId: "agent" })).map((a) => a.name)).toEqual(["agent"]);
  });

  it("are never logged or echoed back", async () => {
    const body = await (await get("/openapi.json")).text();
    expect(body).not.toContain(KEY);
    expect(JSON.stringify(server.ctx.config)).not.toContain(KEY);
  });
});

describe("system routes", () => {
  it("/info reports versions and the features that are mounted", async () => {
    const info = (await (await get("/info", { "x-api-key": KEY })).json()) as any;
    expect(info).toMatchObject({
      version: "0.1.0",
      context: "js",
      langgraph_js_version: expect.stringMatching(/^\d+\./),
    });
    expect(info.flags).toMatchObject({ assistants: true, threads: true, langsmith: false });
    expect(info.flags.crons).toBe(server.routes.some((route) => route.path.includes("/crons")));
  });

  it("/openapi.json documents every mounted route with the API key scheme", async () => {
    const doc = (await (await get("/openapi.json")).json()) as any;
    for (const route of server.routes) {
      const path = route.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
      expect(doc.paths[path]?.[route.method]?.operationId, `${route.method} ${path}`).toBe(route.operationId);
    }
    expect(doc.components.securitySchemes.ApiKeyAuth).toEqual({ type: "apiKey", in: "header", name: "x-api-key" });
    expect(doc.paths["/ok"].get.security).toBeUndefined();
    expect(doc.paths["/info"].get.security).toEqual([{ ApiKeyAuth: [] }]);
  });

  it("/ok?check_db=1 pings storage and answers 500 JSON when it is down", async () => {
    expect(await (await get("/ok?check_db=1")).json()).toEqual({ ok: true });
    const other = await startTestServer(exampleConfig, { redisUrl: testRedisUrl(), prefix: uniquePrefix("down") });
    try {
      await other.ctx.storage.close();
      const res = await fetch(`${other.url}/ok?check_db=1`);
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({ detail: "Storage is unavailable" });
      expect((await fetch(`${other.url}/ok`)).status).toBe(200);
    } finally {
      await other.close();
    }
  });

  it("answers CORS preflights and exposes the run location and pagination headers", async () => {
    const res = await fetch(`${server.url}/threads`, {
      method: "OPTIONS",
      headers: { origin: "https://studio.example", "access-control-request-headers": "x-api-key,content-type" },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-allow-headers")).toBe("x-api-key,content-type");
    const ok = await get("/ok", { origin: "https://studio.example" });
    expect(ok.headers.get("access-control-expose-headers")).toContain("x-pagination-total");
    expect(ok.headers.get("access-control-expose-headers")).toContain("content-location");
  });

  it("answers unknown paths with JSON 404", async () => {
    const res = await get("/nowhere", { "x-api-key": KEY });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: "Not Found" });
  });
});
