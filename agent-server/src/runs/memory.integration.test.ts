import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunTestServer, startRunServer } from "./testing/server.ts";

/** `agent-server dev`: the same run semantics on in-memory storage, in one process. */

let server: RunTestServer;

beforeAll(async () => {
  server = await startRunServer(undefined);
});
afterAll(async () => {
  await server?.close();
});

describe("runs on in-memory storage", () => {
  it("streams, queues in order, interrupts and cancels", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const events = [];
    for await (const event of client.runs.stream(thread.thread_id, "agent", {
      input: { messages: [{ role: "human", content: "in memory" }] },
      streamMode: ["values", "messages-tuple"],
    })) {
      events.push(event);
    }
    expect(events[0]).toMatchObject({ event: "metadata", data: { attempt: 1 } });
    expect(events.filter((e) => e.event === "messages").length).toBeGreaterThan(1);

    const first = await client.runs.create(thread.thread_id, "steps", {
      input: { steps: 2, delay_ms: 50, label: "a" },
    });
    const second = await client.runs.create(thread.thread_id, "steps", { input: { steps: 1, label: "b" } });
    await expect(
      client.runs.create(thread.thread_id, "steps", { input: { label: "c" }, multitaskStrategy: "reject" }),
    ).rejects.toThrow(/409/);
    const values = (await client.runs.join(thread.thread_id, second.run_id)) as unknown as { done: string[] };
    expect(values.done).toEqual(["a:1", "a:2", "b:3"]);
    expect((await client.runs.get(thread.thread_id, first.run_id)).status).toBe("success");

    await client.runs.wait(thread.thread_id, "approval", { input: { request: "x" } });
    expect((await client.threads.get(thread.thread_id)).status).toBe("interrupted");
    expect(await client.runs.wait(thread.thread_id, "approval", { command: { resume: "ok" } })).toMatchObject({
      answer: "ok (recorded)",
    });

    const slow = await client.runs.create(thread.thread_id, "steps", { input: { steps: 1, delay_ms: 30_000 } });
    while ((await client.runs.get(thread.thread_id, slow.run_id)).status !== "running") {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await client.runs.cancel(thread.thread_id, slow.run_id, true);
    expect((await client.runs.get(thread.thread_id, slow.run_id)).status).toBe("interrupted");
  });

  it("lists a thread's runs newest first, paged and filtered, apart from other threads' runs", async () => {
    const { client } = server;
    const [thread, other] = [await client.threads.create(), await client.threads.create()];
    const runIds: string[] = [];
    for (const label of ["a", "b", "c"]) {
      const run = await client.runs.create(thread.thread_id, "steps", { input: { steps: 1, label } });
      runIds.push(run.run_id);
      await client.runs.join(thread.thread_id, run.run_id);
    }
    const elsewhere = await client.runs.create(other.thread_id, "steps", { input: { steps: 1 } });
    await client.runs.join(other.thread_id, elsewhere.run_id);
    const listed = (await client.runs.list(thread.thread_id)).map((run) => run.run_id);
    expect(listed).toEqual([...runIds].reverse());
    const page = await client.runs.list(thread.thread_id, { limit: 1, offset: 1 });
    expect(page.map((run) => run.run_id)).toEqual([runIds[1]]);
    expect(await client.runs.list(thread.thread_id, { status: "error" })).toEqual([]);
    await client.runs.delete(thread.thread_id, runIds[0] as string);
    expect((await client.runs.list(thread.thread_id)).map((run) => run.run_id)).toEqual([runIds[2], runIds[1]]);
    expect((await client.runs.list(other.thread_id)).map((run) => run.run_id)).toEqual([elsewhere.run_id]);
  });
});
