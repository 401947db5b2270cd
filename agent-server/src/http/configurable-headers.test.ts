import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { exampleConfig, startTestServer } from "../graphs/testing/server.ts";
import type { AgentServer } from "../server.ts";
import { ConfigurableHeadersSection, headerForwarder } from "./configurable-headers.ts";

const headersConfig = new URL("./testing/headers/langgraph.json", import.meta.url).pathname;

describe("headerForwarder", () => {
  const request = {
    "x-user-id": "u1",
    "x-user-secret": "s",
    "x-org-id": "o1",
    "x-openai-api-key": "sk-1",
    "x-api-key": "key",
    authorization: "Bearer t",
    "user-agent": "sdk",
    "x-list": ["a", "b"],
  };

  it("forwards nothing without the section", () => {
    expect(headerForwarder(undefined)(request)).toEqual({});
  });

  it("forwards what includes match and excludes do not, never credentials", () => {
    const section = ConfigurableHeadersSection.parse({
      includes: ["X-User-*", "x-org-id", "x-api-key", "authorization"],
      exclude: ["*-secret"],
    });
    expect(headerForwarder(section)(request)).toEqual({ "x-user-id": "u1", "x-org-id": "o1" });
  });

  it("matches only `*` as a wildcard, every other character literally", () => {
    const forward = headerForwarder(ConfigurableHeadersSection.parse({ includes: ["x-a.b", "x-(c)+"] }));
    expect(forward({ "x-a.b": "1", "x-aab": "2", "x-(c)+": "3", "x-cc": "4" })).toEqual({
      "x-a.b": "1",
      "x-(c)+": "3",
    });
  });

  it("refuses unknown keys and non-lists", () => {
    expect(ConfigurableHeadersSection.safeParse({ includes: "x-*" }).success).toBe(false);
    expect(ConfigurableHeadersSection.safeParse({ request: {} }).success).toBe(false);
  });
});

describe("http.configurable_headers through the SDK", () => {
  let configured: AgentServer;
  let plain: AgentServer;

  beforeAll(async () => {
    [configured, plain] = await Promise.all([
      startTestServer(headersConfig, { redisUrl: testRedisUrl(), prefix: uniquePrefix("headers") }),
      startTestServer(exampleConfig, { redisUrl: testRedisUrl(), prefix: uniquePrefix("headers") }),
    ]);
  });
  afterAll(async () => {
    await configured?.close();
    await plain?.close();
  });

  const sent = {
    "x-user-id": "u1",
    "x-user-secret": "hidden",
    "x-org-id": "o1",
    "x-openai-api-key": "sk-provider-key",
    "x-request-id": "r1",
  };

  /** A run created with `sent` as the client's headers, read back with GET …/runs/{id}. */
  async function storedRun(server: AgentServer) {
    const client = new Client({ apiUrl: server.url, defaultHeaders: sent });
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, "agent", { input: { messages: [] } });
    await client.runs.join(thread.thread_id, run.run_id);
    return { created: run, read: await client.runs.get(thread.thread_id, run.run_id) };
  }

  it("forwards only the listed headers into configurable", async () => {
    const { created, read } = await storedRun(configured);
    for (const run of [created, read]) {
      const configurable = (run as unknown as { kwargs: { config: { configurable: Record<string, unknown> } } }).kwargs
        .config.configurable;
      expect(configurable).toMatchObject({ "x-user-id": "u1", "x-org-id": "o1" });
      expect(
        Object.keys(configurable)
          .filter((name) => name.startsWith("x-"))
          .sort(),
      ).toEqual(["x-org-id", "x-user-id"]);
    }
    expect(JSON.stringify(read)).not.toContain("sk-provider-key");
  });

  it("stores and returns no request header without the section", async () => {
    const { created, read } = await storedRun(plain);
    for (const run of [created, read]) {
      const text = JSON.stringify(run);
      for (const [name, value] of Object.entries(sent)) {
        expect(text).not.toContain(name);
        expect(text).not.toContain(value);
      }
      expect(text).not.toContain("user-agent");
    }
  });
});
