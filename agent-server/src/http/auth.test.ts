import { createHash } from "node:crypto";
import { createJsonApp, errorHandler, listen, type RunningServer } from "@agentplane/common";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeyAuth } from "./auth.ts";

const KEY = "auth-test-key";
const logger = pino({ level: "silent" });

/** A project route registered with `.all()`, as custom apps do: it counts the requests it handled. */
let handled = 0;
let server: RunningServer;

beforeAll(async () => {
  const app = createJsonApp();
  app.use(apiKeyAuth([createHash("sha256").update(KEY).digest("hex")], logger));
  app.all("/custom", (_req, res) => {
    handled++;
    res.json({ secret: "project data" });
  });
  app.use(errorHandler(logger));
  server = await listen(app, 0);
});
afterAll(async () => {
  await server?.close();
});

describe("apiKeyAuth", () => {
  it("requires the key on OPTIONS like on any method: the handler never runs without it", async () => {
    const before = handled;
    const res = await fetch(`${server.url}/custom`, { method: "OPTIONS" });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ detail: "Missing or invalid API key" });
    expect(handled).toBe(before);
    const keyed = await fetch(`${server.url}/custom`, { method: "OPTIONS", headers: { "x-api-key": KEY } });
    expect(keyed.status).toBe(200);
    expect(handled).toBe(before + 1);
  });

  it("ends a CORS preflight from an origin CORS did not allow with an empty 204, reaching no handler", async () => {
    const before = handled;
    const res = await fetch(`${server.url}/custom`, {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    expect(await res.text()).toBe("");
    expect(handled).toBe(before);
  });
});
