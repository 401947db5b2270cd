import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { GraphLoadError } from "../graphs/load.ts";
import { exampleConfig } from "../graphs/testing/server.ts";
import { type ExtensionTestServer, startExtensionServer } from "../long-term-store/testing/server.ts";

describe("custom routes from langgraph.json http.app", () => {
  let app: ExtensionTestServer;
  beforeAll(async () => {
    app = await startExtensionServer(testRedisUrl(), {
      prefix: uniquePrefix("custom-app"),
      env: { AGENTPLANE_API_KEYS: "secret-key" },
    });
  });
  afterAll(() => app?.close());

  it("mounts the project's router next to the API, behind the same API key", async () => {
    const headers = { "x-api-key": "secret-key" };
    const hello = await fetch(`${app.url}/custom/hello?name=ada`, { headers });
    expect(await hello.json()).toEqual({ hello: "ada" });
    expect((await fetch(`${app.url}/custom/hello`)).status).toBe(401);
    const info = (await (await fetch(`${app.url}/info`, { headers })).json()) as Record<string, unknown>;
    expect(info.flags).toBeDefined();
    const missing = await fetch(`${app.url}/custom/none`, { headers });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ detail: "Not Found" });
  });

  it("refuses to start when http.app is not an express app or router", async () => {
    const dir = mkdtempSync(join(tmpdir(), "custom-app-"));
    writeFileSync(join(dir, "app.ts"), "export const app = 42;\n");
    writeFileSync(
      join(dir, "langgraph.json"),
      JSON.stringify({
        graphs: { agent: `${exampleConfig.replace("langgraph.json", "")}src/agent.ts:graph` },
        http: { app: "./app.ts:app" },
      }),
    );
    await expect(startExtensionServer(undefined, { configPath: join(dir, "langgraph.json") })).rejects.toBeInstanceOf(
      GraphLoadError,
    );
  });
});
