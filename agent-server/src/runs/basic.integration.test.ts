import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl } from "../../../testing/redis.ts";
import { type RunTestServer, startRunServer } from "./testing/server.ts";

let server: RunTestServer;

beforeAll(async () => {
  server = await startRunServer(testRedisUrl());
});
afterAll(async () => {
  await server?.close();
});

describe("runs", () => {
  it("waits for a run and stores its messages", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const values = await client.runs.wait(thread.thread_id, "agent", {
      input: { messages: [{ role: "human", content: "hello there" }] },
    });
    const messages = (values as { messages: { type: string; content: string }[] }).messages;
    expect(messages.map((m) => [m.type, m.content])).toEqual([
      ["human", "hello there"],
      ["ai", "You said: hello there"],
    ]);
    const after = await client.threads.get(thread.thread_id);
    expect(after.status).toBe("idle");
    const runs = await client.runs.list(thread.thread_id);
    expect(runs.map((r) => r.status)).toEqual(["success"]);
  });

  it("documents every run endpoint and the run schemas in the OpenAPI document", async () => {
    const spec = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
      components: { schemas: Record<string, unknown> };
    };
    for (const path of [
      "/threads/{thread_id}/runs",
      "/threads/{thread_id}/runs/stream",
      "/threads/{thread_id}/runs/wait",
      "/threads/{thread_id}/runs/{run_id}",
      "/threads/{thread_id}/runs/{run_id}/join",
      "/threads/{thread_id}/runs/{run_id}/stream",
      "/threads/{thread_id}/runs/{run_id}/cancel",
      "/threads/{thread_id}/stream",
      "/runs",
      "/runs/stream",
      "/runs/wait",
      "/runs/batch",
      "/runs/cancel",
      "/runs/{run_id}/stream",
    ]) {
      expect(spec.paths).toHaveProperty([path]);
    }
    expect(Object.keys(spec.components.schemas)).toEqual(
      expect.arrayContaining(["Run", "RunCreateStateful", "RunCreateStateless", "RunBatchCreate", "Command"]),
    );
  });
});
