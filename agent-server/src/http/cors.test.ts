import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { exampleConfig } from "../graphs/testing/server.ts";
import { type ExtensionTestServer, startExtensionServer } from "../long-term-store/testing/server.ts";

const preflight = (url: string, origin: string) =>
  fetch(`${url}/threads/search`, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
  });

describe("CORS from langgraph.json http.cors", () => {
  let app: ExtensionTestServer;
  let plain: ExtensionTestServer;

  beforeAll(async () => {
    app = await startExtensionServer(testRedisUrl(), { prefix: uniquePrefix("cors") });
    plain = await startExtensionServer(testRedisUrl(), { prefix: uniquePrefix("cors"), configPath: exampleConfig });
  });
  afterAll(async () => {
    await app?.close();
    await plain?.close();
  });

  it("answers preflights with the configured methods, headers, credentials and max age", async () => {
    const response = await preflight(app.url, "https://studio.example");
    expect(response.status).toBe(204);
    expect(Object.fromEntries(response.headers)).toMatchObject({
      "access-control-allow-origin": "https://studio.example",
      "access-control-allow-methods": "GET, POST",
      "access-control-allow-headers": "x-custom",
      "access-control-allow-credentials": "true",
      "access-control-max-age": "123",
    });
    const get = await fetch(`${app.url}/info`, { headers: { origin: "https://studio.example" } });
    expect(get.headers.get("access-control-expose-headers")).toContain("x-trace");
    expect(get.headers.get("access-control-expose-headers")).toContain("content-location");
    expect(get.headers.get("vary")).toContain("Origin");
  });

  it("gives other origins no CORS headers", async () => {
    const response = await fetch(`${app.url}/info`, { headers: { origin: "https://evil.example" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
    const refused = await preflight(app.url, "https://evil.example");
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("allows any origin without an http.cors section (CORS_ALLOW_ORIGINS default *)", async () => {
    const response = await preflight(plain.url, "https://anywhere.example");
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("access-control-allow-credentials")).toBeNull();
    expect(response.headers.get("access-control-allow-headers")).toBe("content-type");
  });
});
