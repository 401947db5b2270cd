import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl } from "../../../testing/redis.ts";
import { type RunTestServer, startRunServer } from "./testing/server.ts";
import { waitForStatus as waitFor, waitForSteps as waitForStepsOf } from "./testing/wait.ts";

let server: RunTestServer;

beforeAll(async () => {
  server = await startRunServer(testRedisUrl(), { workers: 6 });
});
afterAll(async () => {
  await server?.close();
});

interface StepsValues {
  done: string[];
}

const steps = (label: string, count = 1, delay = 0) => ({ input: { steps: count, delay_ms: delay, label } });

const waitForStatus = (threadId: string, runId: string, status: string, timeoutMs?: number) =>
  waitFor(server.client, threadId, runId, status, timeoutMs);
const waitForSteps = (threadId: string, prefix: string, count: number) =>
  waitForStepsOf(server.client, threadId, prefix, count);

describe("multitask strategies", () => {
  it("enqueue (default) runs queued runs in arrival order; the thread holds both turns, first run first", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const first = await client.runs.create(thread.thread_id, "agent", {
      input: { messages: [{ role: "human", content: "first" }] },
    });
    const second = await client.runs.create(thread.thread_id, "agent", {
      input: { messages: [{ role: "human", content: "second" }] },
    });
    expect(second.multitask_strategy).toBe("enqueue");
    const values = (await client.runs.join(thread.thread_id, second.run_id)) as { messages: { content: string }[] };
    expect(values.messages.map((m) => m.content)).toEqual(["first", "You said: first", "second", "You said: second"]);
    expect((await client.runs.get(thread.thread_id, first.run_id)).status).toBe("success");
    expect((await client.threads.get(thread.thread_id)).status).toBe("idle");
  });

  it("runs 50 enqueued runs of one thread one at a time, in order", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const runs = [];
    for (let i = 0; i < 50; i++) runs.push(await client.runs.create(thread.thread_id, "steps", steps(`r${i}`)));
    const values = (await client.runs.join(thread.thread_id, runs.at(-1)!.run_id)) as unknown as StepsValues;
    expect(values.done).toEqual(runs.map((_, i) => `r${i}:${i + 1}`));
    const listed = await client.runs.list(thread.thread_id, { limit: 100 });
    expect(listed.length).toBe(50);
    expect(listed.every((run) => run.status === "success")).toBe(true);
    expect(listed.map((run) => run.run_id)).toEqual(runs.map((run) => run.run_id).reverse());
  });

  it("reject answers 409 while the thread has a pending or running run", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const running = await client.runs.create(thread.thread_id, "steps", steps("a", 1, 600));
    await expect(
      client.runs.create(thread.thread_id, "steps", { ...steps("b"), multitaskStrategy: "reject" }),
    ).rejects.toThrow(/409/);
    await client.runs.join(thread.thread_id, running.run_id);
    const accepted = await client.runs.create(thread.thread_id, "steps", {
      ...steps("c"),
      multitaskStrategy: "reject",
    });
    const values = (await client.runs.join(thread.thread_id, accepted.run_id)) as unknown as StepsValues;
    expect(values.done).toEqual(["a:1", "c:2"]);
  });

  it("interrupt stops the in-flight run (its work kept, status interrupted) and runs the new one", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const slow = await client.runs.create(thread.thread_id, "steps", steps("slow", 20, 100));
    await waitForStatus(thread.thread_id, slow.run_id, "running");
    await waitForSteps(thread.thread_id, "slow:", 2);
    const next = await client.runs.create(thread.thread_id, "steps", {
      ...steps("next"),
      multitaskStrategy: "interrupt",
    });
    const values = (await client.runs.join(thread.thread_id, next.run_id)) as unknown as StepsValues;
    expect((await client.runs.get(thread.thread_id, slow.run_id)).status).toBe("interrupted");
    const slowSteps = values.done.filter((step) => step.startsWith("slow:"));
    expect(slowSteps.length).toBeGreaterThan(0);
    expect(slowSteps.length).toBeLessThan(20);
    expect(values.done.at(-1)).toMatch(/^next:/);
  });

  it("rollback removes the in-flight run and its work; the new run starts from the earlier state", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "steps", steps("base"));
    const before = await client.threads.getHistory(thread.thread_id, { limit: 100 });
    const slow = await client.runs.create(thread.thread_id, "steps", steps("slow", 20, 100));
    await waitForStatus(thread.thread_id, slow.run_id, "running");
    await waitForSteps(thread.thread_id, "slow:", 2);
    const next = await client.runs.create(thread.thread_id, "steps", {
      ...steps("next"),
      multitaskStrategy: "rollback",
    });
    const values = (await client.runs.join(thread.thread_id, next.run_id)) as unknown as StepsValues;
    expect(values.done).toEqual(["base:1", "next:2"]);
    await expect(client.runs.get(thread.thread_id, slow.run_id)).rejects.toThrow(/404/);
    const state = await client.threads.getState<StepsValues>(thread.thread_id);
    expect(state.values.done).toEqual(["base:1", "next:2"]);
    const history = await client.threads.getHistory(thread.thread_id, { limit: 100 });
    expect(history.filter((item) => item.metadata?.run_id === slow.run_id)).toEqual([]);
    const nextRun = history.filter((item) => item.metadata?.run_id === next.run_id);
    expect(history.map((item) => item.checkpoint.checkpoint_id)).toEqual([
      ...nextRun.map((item) => item.checkpoint.checkpoint_id),
      ...before.map((item) => item.checkpoint.checkpoint_id),
    ]);
    expect(nextRun.at(-1)?.parent_checkpoint?.checkpoint_id).toBe(before[0]?.checkpoint.checkpoint_id);
  });
});

describe("cancel", () => {
  it("interrupts a running run within a second, keeping its work", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, "steps", steps("c", 1, 30_000));
    await waitForStatus(thread.thread_id, run.run_id, "running");
    const started = Date.now();
    await client.runs.cancel(thread.thread_id, run.run_id, true);
    expect(Date.now() - started).toBeLessThan(1000);
    expect((await client.runs.get(thread.thread_id, run.run_id)).status).toBe("interrupted");
    expect((await client.threads.get(thread.thread_id)).status).toBe("idle");
  });

  it("rollback deletes a pending run at once; interrupt marks it interrupted", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const blocker = await client.runs.create(thread.thread_id, "steps", steps("block", 1, 800));
    const pendingA = await client.runs.create(thread.thread_id, "steps", steps("a"));
    const pendingB = await client.runs.create(thread.thread_id, "steps", steps("b"));
    await client.runs.cancel(thread.thread_id, pendingA.run_id, false, "rollback");
    await client.runs.cancel(thread.thread_id, pendingB.run_id, false, "interrupt");
    await expect(client.runs.get(thread.thread_id, pendingA.run_id)).rejects.toThrow(/404/);
    expect((await client.runs.get(thread.thread_id, pendingB.run_id)).status).toBe("interrupted");
    const values = (await client.runs.join(thread.thread_id, blocker.run_id)) as unknown as StepsValues;
    expect(values.done).toEqual(["block:1"]);
  });

  it("deletes a pending run (the thread goes idle) but refuses to delete a running one", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const delayed = await client.runs.create(thread.thread_id, "steps", { ...steps("later"), afterSeconds: 60 });
    expect((await client.threads.get(thread.thread_id)).status).toBe("busy");
    await client.runs.delete(thread.thread_id, delayed.run_id);
    expect((await client.threads.get(thread.thread_id)).status).toBe("idle");
    const running = await client.runs.create(thread.thread_id, "steps", steps("now", 1, 30_000));
    await waitForStatus(thread.thread_id, running.run_id, "running");
    await expect(client.runs.delete(thread.thread_id, running.run_id)).rejects.toThrow(/409/);
    await client.runs.cancel(thread.thread_id, running.run_id, true);
  });

  it("bulk-cancels runs by id and answers 404 for unknown runs", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const a = await client.runs.create(thread.thread_id, "steps", steps("a", 1, 30_000));
    const b = await client.runs.create(thread.thread_id, "steps", steps("b"));
    await waitForStatus(thread.thread_id, a.run_id, "running");
    const response = await fetch(`${server.url}/runs/cancel`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ thread_id: thread.thread_id, run_ids: [a.run_id, b.run_id] }),
    });
    expect(response.status).toBe(204);
    await waitForStatus(thread.thread_id, a.run_id, "interrupted");
    expect((await client.runs.get(thread.thread_id, b.run_id)).status).toBe("interrupted");
    await expect(client.runs.cancel(thread.thread_id, crypto.randomUUID())).rejects.toThrow(/404/);
  });

  it("cancels a streamed run when the client disconnects with on_disconnect=cancel", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const controller = new AbortController();
    const response = await fetch(`${server.url}/threads/${thread.thread_id}/runs/stream`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ assistant_id: "steps", ...steps("d", 1, 30_000), on_disconnect: "cancel" }),
      signal: controller.signal,
    });
    const runId = response.headers.get("content-location")?.split("/").at(-1) as string;
    await waitForStatus(thread.thread_id, runId, "running");
    controller.abort();
    await waitForStatus(thread.thread_id, runId, "interrupted", 3000);
  });
});
