import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../config.ts";
import { type AgentServer, startAgentServer } from "../server.ts";

/**
 * Custom auth beside API keys (in-memory storage, one process): the key is checked first, then
 * the project's `authenticate`; Studio requests prove themselves with the key and act as the
 * Studio user, whom the handlers still filter.
 */
const project = new URL("./testing/project/langgraph.json", import.meta.url).pathname;
const KEY = "deployment-key";

describe("custom auth with API keys", () => {
  let server: AgentServer;

  beforeAll(async () => {
    const config = loadConfig(["dev", "--config", project, "--port", "0", "--host", "127.0.0.1"], {
      AGENTPLANE_API_KEYS: KEY,
      LOG_LEVEL: "silent",
    });
    server = await startAgentServer(config);
  }, 60_000);

  afterAll(async () => {
    await server?.close();
  });

  const search = (headers: Record<string, string>) =>
    fetch(`${server.url}/threads/search`, {
      method: "POST",
      body: "{}",
      headers: { "content-type": "application/json", ...headers },
    });

  it("needs the key and a user: either alone is a 401", async () => {
    expect((await search({ authorization: "Bearer token-alice" })).status).toBe(401);
    expect(await (await search({ authorization: "Bearer token-alice" })).json()).toEqual({
      detail: "Missing or invalid API key",
    });
    expect((await search({ "x-api-key": KEY })).status).toBe(401);
    expect((await search({ "x-api-key": KEY, authorization: "Bearer token-alice" })).status).toBe(200);
  });

  it("lets Studio requests with the key act as the Studio user, filtered like anyone", async () => {
    const studio = new Client({
      apiUrl: server.url,
      apiKey: KEY,
      defaultHeaders: { "x-auth-scheme": "langsmith" },
      callerOptions: { maxRetries: 0 },
    });
    const alice = new Client({
      apiUrl: server.url,
      apiKey: KEY,
      defaultHeaders: { authorization: "Bearer token-alice" },
      callerOptions: { maxRetries: 0 },
    });
    const studioThread = await studio.threads.create();
    expect(studioThread.metadata).toEqual({ owner: "langgraph-studio-user" });
    const values = await studio.runs.wait(studioThread.thread_id, "whoami", { input: {} });
    expect(values).toMatchObject({ user: "langgraph-studio-user/langgraph-studio-user" });
    const aliceThread = await alice.threads.create();
    await expect(studio.threads.get(aliceThread.thread_id)).rejects.toMatchObject({ status: 404 });
    // Without the key, the header proves nothing.
    expect((await search({ "x-auth-scheme": "langsmith" })).status).toBe(401);
  });
});
