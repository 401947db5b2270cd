import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, testRedisUrl } from "../../../../testing/redis.ts";
import { type ServerProcess, spawnServer } from "../testing/process.ts";

/**
 * Values events logged as references to checkpoints (issue #21), seen from two processes on one
 * Redis: the worker's (which remembers the values it streamed) and another one (which reads
 * them from the checkpoint). Every reader must see exactly the events it saw when the log held
 * copies.
 */

interface Item {
  event: string;
  data: unknown;
  id?: string;
}

async function collect(stream: AsyncIterable<unknown>): Promise<Item[]> {
  const items: Item[] = [];
  for await (const item of stream) items.push(item as Item);
  return items;
}

describe("values events stored as checkpoint references", () => {
  const prefix = `values-refs-${randomUUID().slice(0, 8)}:`;
  let worker: ServerProcess;
  let reader: ServerProcess;
  let redis: Awaited<ReturnType<typeof connectTestRedis>>;

  beforeAll(async () => {
    redis = await connectTestRedis();
    // One after the other: two compiling at once on a loaded machine can miss the start deadline.
    worker = await spawnServer(testRedisUrl(), prefix, { N_WORKERS: "2" });
    reader = await spawnServer(testRedisUrl(), prefix, { N_WORKERS: "0" });
  });
  afterAll(async () => {
    await Promise.all([worker?.stop(), reader?.stop()]);
    await redis?.quit();
  });

  const logOf = (runId: string) => redis.xRange(`${prefix}runs:ev:${runId}`, "-", "+");

  it("streams live, and joins and resumes anywhere, the same events; the log holds no copy of the state", async () => {
    const thread = await worker.client.threads.create();
    await worker.client.runs.wait(thread.thread_id, "agent", {
      input: { messages: [{ role: "human", content: "one" }] },
    });
    const live = await collect(
      worker.client.runs.stream(thread.thread_id, "agent", {
        input: { messages: [{ role: "human", content: "two" }] },
        streamMode: ["values", "updates"],
      }),
    );
    const runId = (live[0]?.data as { run_id: string }).run_id;
    const values = live.filter((item) => item.event === "values");
    expect(values.length).toBe(2);
    expect((values.at(-1)?.data as { messages: { content: string }[] }).messages.map((m) => m.content)).toEqual([
      "one",
      "You said: one",
      "two",
      "You said: two",
    ]);

    const stored = (await logOf(runId)) ?? [];
    const storedValues = stored.filter((entry) => entry.message.event === "values");
    expect(storedValues.length).toBe(2);
    for (const entry of storedValues) expect(Object.keys(entry.message).sort()).toEqual(["event", "ref"]);
    expect(stored.at(-1)?.message.data).toContain('"values_at"');

    for (const server of [worker, reader]) {
      const joined = await collect(server.client.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1" }));
      expect(joined.map(({ event, data }) => ({ event, data }))).toEqual(
        live.map(({ event, data }) => ({ event, data })),
      );
      const resumed = await collect(server.client.runs.joinStream(thread.thread_id, runId, { lastEventId: "1" }));
      expect(resumed.map((item) => item.data)).toEqual(live.slice(2).map((item) => item.data));
      expect(await server.client.runs.join(thread.thread_id, runId)).toEqual(values.at(-1)?.data);
    }
  });

  it("answers a wait nobody streamed from its checkpoint, with an output narrower than the state", async () => {
    const thread = await worker.client.threads.create();
    const run = await worker.client.runs.create(thread.thread_id, "private_notes", { input: { question: "q" } });
    const waited = await worker.client.runs.join(thread.thread_id, run.run_id);
    expect(waited).toEqual({ question: "q", answer: "re: q", notes: ["read q"] });
    expect(await reader.client.runs.join(thread.thread_id, run.run_id)).toEqual(waited);
    const here = await collect(worker.client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" }));
    const there = await collect(reader.client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" }));
    expect(there).toEqual(here);
    expect(here.filter((item) => item.event === "values").map((item) => item.data)).toEqual([
      { question: "q", notes: [] },
      waited,
    ]);
  });

  it("keeps an interrupt's values in the log, as they are no checkpoint's state", async () => {
    const thread = await worker.client.threads.create();
    const run = await worker.client.runs.create(thread.thread_id, "approval", { input: { request: "x" } });
    const waited = (await reader.client.runs.join(thread.thread_id, run.run_id)) as Record<string, unknown>;
    expect(waited.__interrupt__).toEqual([expect.objectContaining({ value: { question: "approve x?" } })]);
    const stored = (await logOf(run.run_id)) ?? [];
    expect(stored.at(-1)?.message.data).toContain("__interrupt__");
    const there = await collect(reader.client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" }));
    expect(there.filter((item) => item.event === "values").map((item) => item.data)).toEqual([
      { request: "x" },
      waited,
    ]);
  });

  it("leaves the thread record a reference to the run's checkpoint; every replica shows the values", async () => {
    const thread = await worker.client.threads.create({ metadata: { case: "record-ref" } });
    const waited = await worker.client.runs.wait(thread.thread_id, "private_notes", { input: { question: "r" } });
    const record = JSON.parse((await redis.get(`${prefix}thread:${thread.thread_id}`)) as string);
    expect(record).not.toHaveProperty("values");
    expect(record.values_at.thread_id).toBe(thread.thread_id);
    for (const server of [worker, reader]) {
      expect((await server.client.threads.get(thread.thread_id)).values).toEqual(waited);
      const found = await server.client.threads.search({
        values: { answer: "re: r" },
        metadata: { case: "record-ref" },
      });
      expect(found.map((item) => [item.thread_id, item.values])).toEqual([[thread.thread_id, waited]]);
    }
    for (const server of [worker, reader])
      expect((await server.client.threads.copy(thread.thread_id)).values).toEqual(waited);
    // A state update writes values that no run streamed: they are kept inline again.
    await reader.client.threads.updateState(thread.thread_id, { values: { answer: "edited" }, asNode: "reply" });
    const after = JSON.parse((await redis.get(`${prefix}thread:${thread.thread_id}`)) as string);
    expect(after).not.toHaveProperty("values_at");
    expect(after.values).toMatchObject({ question: "r", answer: "edited" });
    for (const server of [worker, reader]) {
      expect((await server.client.threads.get(thread.thread_id)).values).toEqual(after.values);
    }
  });
});
