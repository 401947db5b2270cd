import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { GraphLoadError } from "../graphs/load.ts";
import { ProjectError } from "../graphs/project.ts";
import { exampleConfig, startTestServer } from "../graphs/testing/server.ts";
import { type ExtensionTestServer, startExtensionServer } from "../long-term-store/testing/server.ts";

const exampleGraph = `${exampleConfig.replace("langgraph.json", "")}src/agent.ts:graph`;

/** A project with the example graph, `files` beside its `langgraph.json`, and the given sections. */
function writeProject(files: Record<string, string>, sections: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), "custom-app-"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  writeFileSync(join(dir, "langgraph.json"), JSON.stringify({ graphs: { agent: exampleGraph }, ...sections }));
  return join(dir, "langgraph.json");
}

describe("custom routes from langgraph.json http.app", () => {
  let app: ExtensionTestServer;
  beforeAll(async () => {
    app = await startExtensionServer(testRedisUrl(), {
      prefix: uniquePrefix("custom-app"),
      env: { AGENTPLANE_API_KEYS: "secret-key" },
    });
  });
  afterAll(() => app?.close());

  it("mounts the project's express router next to the API, behind the same API key", async () => {
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
});

describe("a plain fetch-style http.app (no Hono)", () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;
  beforeAll(async () => {
    const configPath = writeProject(
      {
        "app.mjs": `export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/plain") return Response.json({ method: request.method, body: await request.text() });
    return new Response("not mine", { status: 404 });
  },
};
`,
      },
      { http: { app: "./app.mjs" } },
    );
    server = await startTestServer(configPath);
  });
  afterAll(() => server?.close());

  it("answers its own paths and leaves the rest, by a 404, to the API", async () => {
    const plain = await fetch(`${server.url}/plain`, { method: "POST", body: "raw text" });
    expect(await plain.json()).toEqual({ method: "POST", body: "raw text" });
    const info = await fetch(`${server.url}/info`);
    expect(info.status).toBe(200);
    expect(((await info.json()) as { flags: unknown }).flags).toBeDefined();
  });
});

describe("http options", () => {
  let server: Awaited<ReturnType<typeof startTestServer>> | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("removes the route groups the disable_* options name, keeping /ok", async () => {
    server = await startTestServer(
      writeProject({}, { http: { disable_assistants: true, disable_runs: true, disable_meta: true } }),
    );
    const status = async (method: string, path: string) =>
      (
        await fetch(`${server!.url}${path}`, {
          method,
          headers: { "content-type": "application/json" },
          body: method === "GET" ? undefined : "{}",
        })
      ).status;
    expect(await status("POST", "/assistants/search")).toBe(404);
    expect(await status("POST", "/runs/wait")).toBe(404);
    expect(await status("GET", "/info")).toBe(404);
    expect(await status("GET", "/ok")).toBe(200);
    expect(await status("POST", "/threads/search")).toBe(200);
    expect(await status("POST", "/store/items/search")).toBe(200);
    const thread = (await (
      await fetch(`${server.url}/threads`, {
        method: "POST",
        body: "{}",
        headers: { "content-type": "application/json" },
      })
    ).json()) as { thread_id: string };
    expect(await status("GET", `/threads/${thread.thread_id}/runs`)).toBe(404);
    expect(await status("GET", `/threads/${thread.thread_id}`)).toBe(200);
  });
});

describe("bad http.app and http options stop the start with a clear message", () => {
  const start = (configPath: string, env: NodeJS.ProcessEnv = {}) => startTestServer(configPath, { env });

  it("refuses an export that is neither a fetch-style app nor an express app or router", async () => {
    const configPath = writeProject(
      { "app.ts": "export const app = { hello: 42 };\n" },
      { http: { app: "./app.ts:app" } },
    );
    const failure = start(configPath);
    await expect(failure).rejects.toBeInstanceOf(GraphLoadError);
    await expect(failure).rejects.toThrow(
      /http.app: .*app.ts export "app" is neither an app with a fetch\(request\) handler \(Hono\) nor an express app or router/,
    );
  });

  it.each([
    [{ mount_prefix: "/api" }, /http.mount_prefix is not supported by this server \(serve the API under a path prefix/],
    [{ configurable_headers: { includes: "x-user" } }, /http.configurable_headers.includes/],
    [{ configurable_headers: { request: {} } }, /http.configurable_headers/],
    [{ enable_custom_route_auth: true }, /http.enable_custom_route_auth is not supported/],
    [{ disable_runs: "yes" }, /http.disable_runs/],
    [{ cors: { allow_origin_regex: "(" } }, /http.cors.allow_origin_regex is not a valid regular expression/],
    [{ cors: { allow_origin: ["x"] } }, /http.cors/],
  ])("refuses http %j", async (http, message) => {
    const failure = start(writeProject({}, { http }));
    await expect(failure).rejects.toBeInstanceOf(ProjectError);
    await expect(failure).rejects.toThrow(message);
  });

  it("refuses a LANGGRAPH_CONFIG that is not JSON, or not graph ids mapped to objects", async () => {
    try {
      await expect(start(writeProject({}, { env: { LANGGRAPH_CONFIG: "{agent: nope" } }))).rejects.toThrow(
        /LANGGRAPH_CONFIG is not valid JSON/,
      );
      delete process.env.LANGGRAPH_CONFIG;
      await expect(start(writeProject({}, { env: { LANGGRAPH_CONFIG: '{"agent": 3}' } }))).rejects.toThrow(
        /LANGGRAPH_CONFIG must map graph ids to objects .* at agent/,
      );
    } finally {
      delete process.env.LANGGRAPH_CONFIG;
    }
  });
});
