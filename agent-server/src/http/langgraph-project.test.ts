import { Writable } from "node:stream";
import { Client } from "@langchain/langgraph-sdk";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { defaultAssistantId } from "../assistants/resolve.ts";
import { startTestServer } from "../graphs/testing/server.ts";
import type { AgentServer } from "../server.ts";

/**
 * A project written the way the LangGraph.js docs show: Hono custom routes with middleware,
 * `getLogger()` at import time, a graph calling its own server through `new Client()`, a
 * relative webhook, and `LANGGRAPH_CONFIG` in `env`.
 */
const projectConfig = new URL("./testing/project/langgraph.json", import.meta.url).pathname;
const KEY = "project-test-key";
const headers = { "x-api-key": KEY };

/** Every log line the server writes, parsed. */
const logLines: Record<string, unknown>[] = [];
const logger = pino(
  { level: "debug" },
  new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) if (line.trim()) logLines.push(JSON.parse(line));
      done();
    },
  }),
);

async function until<T>(read: () => Promise<T | undefined>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("a LangGraph.js project with Hono custom routes", () => {
  let server: AgentServer;
  let client: Client;

  beforeAll(async () => {
    server = await startTestServer(projectConfig, {
      redisUrl: testRedisUrl(),
      prefix: uniquePrefix("project"),
      env: { AGENTPLANE_API_KEYS: KEY },
      logger,
    });
    client = new Client({ apiUrl: server.url, apiKey: KEY });
  });
  afterAll(async () => {
    await server?.close();
    // The project's env went into the process environment, where it would win over other projects'.
    delete process.env.LANGGRAPH_CONFIG;
  });

  it("registers getLogger() before graph modules load, with the graph id in the bindings", async () => {
    expect(logLines).toContainEqual(
      expect.objectContaining({ msg: "agent module loaded", graph_id: "agent", fixture: "http-project" }),
    );
    const run = (await client.runs.wait(null, "agent", { input: { name: "Log" } })) as { reply: string };
    expect(run.reply).toContain("Log");
    expect(logLines).toContainEqual(
      expect.objectContaining({ msg: "greeting", name: "Log", graph_id: "agent", langgraph_node: "greet" }),
    );
  });

  it("runs the app's middleware around built-in routes", async () => {
    const info = await fetch(`${server.url}/info`, { headers });
    expect(info.status).toBe(200);
    expect(info.headers.get("x-custom-middleware")).toBe("seen");
    expect(((await info.json()) as { flags: unknown }).flags).toBeDefined();
    const created = await fetch(`${server.url}/threads`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ metadata: { via: "middleware" } }),
    });
    expect(created.status).toBe(200);
    expect(created.headers.get("x-custom-middleware")).toBe("seen");
    expect(((await created.json()) as { metadata: unknown }).metadata).toEqual({ via: "middleware" });
  });

  it("lets middleware intercept a built-in path, and routes shadow one", async () => {
    const blocked = await fetch(`${server.url}/threads/search`, {
      method: "POST",
      headers: { ...headers, "x-block": "yes", "content-type": "application/json" },
      body: "{}",
    });
    expect(blocked.status).toBe(403);
    expect(await blocked.json()).toEqual({ detail: "blocked by custom middleware" });
    expect(Array.isArray(await client.threads.search({ limit: 1 }))).toBe(true);
    expect(await (await fetch(`${server.url}/ok`)).json()).toEqual({ ok: true, source: "custom" });
  });

  it("serves custom routes behind the API key; unmatched paths fall through to the API's 404", async () => {
    const hello = await fetch(`${server.url}/custom/hello?name=ada`, { headers });
    expect(await hello.json()).toEqual({ hello: "ada" });
    expect((await fetch(`${server.url}/custom/hello`)).status).toBe(401);
    const echo = await fetch(`${server.url}/custom/echo`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ a: [1, 2] }),
    });
    expect(await echo.json()).toEqual({ received: { a: [1, 2] } });
    const missing = await fetch(`${server.url}/custom/none`, { headers });
    expect(missing.status).toBe(404);
    expect(missing.headers.get("x-custom-middleware")).toBe("seen");
    expect(await missing.json()).toEqual({ detail: "Not Found" });
  });

  it("streams a custom route's response as it is written", async () => {
    const response = await fetch(`${server.url}/custom/stream`, { headers });
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const decoder = new TextDecoder();
    const arrivals: { at: number; text: string }[] = [];
    for await (const chunk of response.body!) arrivals.push({ at: Date.now(), text: decoder.decode(chunk) });
    const text = arrivals.map((a) => a.text).join("");
    expect([...text.matchAll(/data: (\d)/g)].map((m) => m[1])).toEqual(["0", "1", "2"]);
    // Three events 150 ms apart: the first arrived well before the stream ended.
    expect(arrivals.at(-1)!.at - arrivals[0]!.at).toBeGreaterThanOrEqual(200);
  });

  it("streams built-in run events through the app's middleware", async () => {
    const events: string[] = [];
    for await (const part of client.runs.stream(null, "agent", { input: { name: "Sam" }, streamMode: "values" })) {
      events.push(part.event);
    }
    expect(events[0]).toBe("metadata");
    expect(events).toContain("values");
  });

  it("gives the default assistants config and context from LANGGRAPH_CONFIG", async () => {
    const assistant = await client.assistants.get(defaultAssistantId("agent"));
    expect(assistant.config).toMatchObject({ configurable: { greeting: "Hello" }, tags: ["from-env"] });
    expect(assistant.context).toEqual({ model: "fixture-model" });
    const caller = await client.assistants.get(defaultAssistantId("caller"));
    expect(caller.context ?? {}).toEqual({});
    const result = (await client.runs.wait(null, "agent", { input: { name: "Ada" } })) as { reply: string };
    expect(result.reply).toBe("Hello Ada (fixture-model)");
  });

  it("binds new Client() without apiUrl to this server, in graphs and in custom routes", async () => {
    const result = (await client.runs.wait(null, "caller", { input: { name: "Bo" } })) as {
      reply: string;
      assistants: number;
    };
    expect(result).toMatchObject({ reply: "Hello Bo (fixture-model)", assistants: 1 });
    const fromRoute = await fetch(`${server.url}/custom/assistants`, { headers });
    expect(await fromRoute.json()).toMatchObject({ count: 1, context: { model: "fixture-model" } });
  });

  it("delivers a relative webhook to the project's own route", async () => {
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, "agent", {
      input: { name: "Hook" },
      webhook: "/hooks/done",
    });
    const delivery = await until(async () => {
      const response = await fetch(`${server.url}/hooks/deliveries`, { headers });
      const deliveries = (await response.json()) as { run_id: string; status: string; values: unknown }[];
      return deliveries.find((d) => d.run_id === run.run_id);
    }, "the webhook delivery");
    expect(delivery).toMatchObject({
      status: "success",
      values: { name: "Hook", reply: "Hello Hook (fixture-model)" },
    });
  });
});
