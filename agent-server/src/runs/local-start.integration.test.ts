import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl } from "../../../testing/redis.ts";
import { type RunTestServer, startRunServer } from "./testing/server.ts";

/**
 * A run created on a process with a free worker starts there at once (claimed as it is stored,
 * no trip through the queue) and `…/wait` awaits it in-process; with every worker busy, runs
 * queue and are taken as workers free up, in order per thread.
 */
describe.each([
  ["Redis", () => testRedisUrl()],
  ["memory", () => undefined],
])("runs started as they are created (%s)", (_storage, redisUrl) => {
  let server: RunTestServer;
  beforeAll(async () => {
    server = await startRunServer(redisUrl(), { workers: 2 });
  });
  afterAll(async () => {
    await server?.close();
  });

  const slow = (label: string) => ({ input: { steps: 1, delay_ms: 300, label } });

  it("is running as soon as the create call returns while a worker is free", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, "steps", slow("a"));
    expect((await client.runs.get(thread.thread_id, run.run_id)).status).toBe("running");
    expect((await client.threads.get(thread.thread_id)).status).toBe("busy");
    await client.runs.join(thread.thread_id, run.run_id);
    expect((await client.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
    expect((await client.threads.get(thread.thread_id)).status).toBe("idle");
  });

  it("answers a wait with the whole state and keeps it as the thread's values, also beyond the graph's output", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const output = await client.runs.wait(thread.thread_id, "private_notes", { input: { question: "why" } });
    expect(output).toEqual({ question: "why", answer: "re: why", notes: ["read why"] });
    const after = await client.threads.get(thread.thread_id);
    expect(after.status).toBe("idle");
    expect(after.values).toEqual({ question: "why", answer: "re: why", notes: ["read why"] });
    expect((await client.threads.getState(thread.thread_id)).values).toEqual(after.values);
  });

  it("queues runs while every worker is busy and runs them as workers free up, each thread in order", async () => {
    const { client } = server;
    const threads = await Promise.all([1, 2, 3].map(() => client.threads.create()));
    const [first, second, third] = threads.map((thread) => thread.thread_id) as [string, string, string];
    const busy = [
      await client.runs.create(first, "steps", slow("first-1")),
      await client.runs.create(second, "steps", slow("second-1")),
    ];
    const waiting = await client.runs.create(third, "steps", slow("third-1"));
    const behind = await client.runs.create(first, "steps", slow("first-2"));
    expect((await client.runs.get(third, waiting.run_id)).status).toBe("pending");
    expect((await client.runs.get(first, behind.run_id)).status).toBe("pending");
    const values = (await client.runs.wait(third, "steps", slow("third-2"))) as { done: string[] };
    expect(values.done).toEqual(["third-1:1", "third-2:2"]);
    await Promise.all(busy.map((run) => client.runs.join(run.thread_id, run.run_id)));
    const firstValues = (await client.runs.join(first, behind.run_id)) as { done: string[] };
    expect(firstValues.done).toEqual(["first-1:1", "first-2:2"]);
  });
});
