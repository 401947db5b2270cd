import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalRedis, startRedisServer } from "../../../testing/redis-server.ts";
import { type RunTestServer, startRunServer } from "../runs/testing/server.ts";

const hello = { messages: [{ role: "human", content: "hi" }] };

/** A private Redis, since the test flushes it. */
describe("graph ids as assistant ids", () => {
  let redis: LocalRedis;
  let server: RunTestServer;

  beforeAll(async () => {
    redis = await startRedisServer();
    server = await startRunServer(redis.url);
  });
  afterAll(async () => {
    await server?.close();
    await redis?.stop();
  });

  it("keep working after Redis lost its data (FLUSHALL)", async () => {
    const admin = createClient({ url: redis.url });
    await admin.connect();
    await admin.flushAll();
    await admin.close();
    const result = await server.client.runs.wait(null, "agent", { input: hello });
    expect((result as { messages: { content: string }[] }).messages.at(-1)?.content).toBe("You said: hi");
    expect((await server.client.assistants.get("agent")).graph_id).toBe("agent");
  });

  it("keep working after the graph's assistant was deleted", async () => {
    await server.client.assistants.delete("agent");
    expect((await server.client.assistants.get("agent")).graph_id).toBe("agent");
    const thread = await server.client.threads.create();
    await server.client.runs.wait(thread.thread_id, "agent", { input: hello });
    expect((await server.client.runs.list(thread.thread_id))[0]?.status).toBe("success");
  });
});
