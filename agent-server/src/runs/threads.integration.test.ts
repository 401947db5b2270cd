import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl } from "../../../testing/redis.ts";
import { type RunTestServer, startRunServer } from "./testing/server.ts";
import { waitForStatus, waitForSteps, waitUntil } from "./testing/wait.ts";

/** What runs leave in a thread's checkpoints, rollbacks, thread deletion and the thread stream, on both storages. */

const hello = (content: string) => ({ messages: [{ role: "human", content }] });
const steps = (label: string, count = 1, delay = 0) => ({ input: { steps: count, delay_ms: delay, label } });

interface StreamEvent {
  event: string;
  data: unknown;
  id?: string;
}

describe.each([
  ["Redis", () => testRedisUrl()],
  ["in-memory", () => undefined],
])("threads and runs on %s storage", (_kind, redisUrl) => {
  let server: RunTestServer;

  beforeAll(async () => {
    server = await startRunServer(redisUrl(), { workers: 4 });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** The thread stream's events until `enough` says so (then the connection is closed). */
  async function threadEvents(
    threadId: string,
    options: { lastEventId?: string; streamMode?: string | string[] },
    enough: (events: StreamEvent[]) => boolean,
  ): Promise<StreamEvent[]> {
    const controller = new AbortController();
    const events: StreamEvent[] = [];
    const stream = server.client.threads.joinStream(threadId, {
      ...options,
      signal: controller.signal,
    } as Parameters<Client["threads"]["joinStream"]>[1]);
    try {
      for await (const event of stream as AsyncIterable<StreamEvent>) {
        events.push(event);
        if (enough(events)) break;
      }
    } finally {
      controller.abort();
    }
    return events;
  }

  const count = (events: StreamEvent[], name: string) => events.filter((event) => event.event === name).length;

  it("state and history metadata carry the run's context and each node's writes, never the API key or headers", async () => {
    const client = new Client({
      apiUrl: server.url,
      defaultHeaders: { "x-api-key": "key-that-must-not-leak", "x-request-source": "tests" },
    });
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, "agent", {
      input: hello("hi"),
      metadata: { team: "blue" },
      config: { configurable: { user_id: "user-1" } },
    });
    await client.runs.join(thread.thread_id, run.run_id);

    const state = await client.threads.getState(thread.thread_id);
    expect(state.metadata).toMatchObject({
      thread_id: thread.thread_id,
      graph_id: "agent",
      assistant_id: run.assistant_id,
      run_id: run.run_id,
      user_id: "user-1",
      team: "blue",
      created_by: "system",
      source: "loop",
      step: 1,
      parents: {},
      writes: { call_model: { messages: [{ type: "ai", content: "You said: hi" }] } },
    });
    expect(JSON.stringify(state.metadata)).not.toContain("key-that-must-not-leak");
    // Headers reach a run only when `http.configurable_headers` lists them (http/configurable-headers.test.ts).
    expect(state.metadata).not.toHaveProperty("x-request-source");
    const history = await client.threads.getHistory(thread.thread_id);
    expect(history.map((item) => item.metadata?.step)).toEqual([1, 0, -1]);
    expect(history.map((item) => item.metadata?.writes)).toEqual([
      state.metadata?.writes,
      null,
      { __start__: hello("hi") },
    ]);
    const ofRun = await client.threads.getHistory(thread.thread_id, { metadata: { run_id: run.run_id, step: 0 } });
    expect(ofRun.map((item) => item.checkpoint.checkpoint_id)).toEqual([history[1]?.checkpoint.checkpoint_id]);

    await client.threads.updateState(thread.thread_id, {
      values: { messages: [{ role: "ai", content: "edited" }] },
      asNode: "call_model",
    });
    const updated = await client.threads.getState(thread.thread_id);
    expect(updated.metadata).toMatchObject({
      thread_id: thread.thread_id,
      graph_id: "agent",
      source: "update",
      step: 2,
      writes: { call_model: { messages: [{ role: "ai", content: "edited" }] } },
    });
  });

  it("cancel with action=rollback removes the running run and its checkpoints; the thread is as before", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "steps", steps("base"));
    const before = await client.threads.getHistory(thread.thread_id, { limit: 100 });
    const slow = await client.runs.create(thread.thread_id, "steps", steps("slow", 20, 100));
    await waitForStatus(client, thread.thread_id, slow.run_id, "running");
    await waitForSteps(client, thread.thread_id, "slow:", 2);

    await client.runs.cancel(thread.thread_id, slow.run_id, true, "rollback");

    await expect(client.runs.get(thread.thread_id, slow.run_id)).rejects.toThrow(/404/);
    const after = await client.threads.getHistory(thread.thread_id, { limit: 100 });
    expect(after.map((item) => item.checkpoint.checkpoint_id)).toEqual(
      before.map((item) => item.checkpoint.checkpoint_id),
    );
    expect((await client.threads.get(thread.thread_id)).values).toMatchObject({ done: ["base:1"] });
    const next = await client.runs.wait(thread.thread_id, "steps", steps("next"));
    expect(next).toMatchObject({ done: ["base:1", "next:2"] });
  });

  it("rolling back a run that continued an interrupted thread leaves the thread interrupted again", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "steps", { ...steps("held", 3, 300), interruptBefore: ["step"] });
    expect((await client.threads.get(thread.thread_id)).status).toBe("interrupted");
    const continued = await client.runs.create(thread.thread_id, "steps", { input: null });
    await waitForStatus(client, thread.thread_id, continued.run_id, "running");
    await waitForSteps(client, thread.thread_id, "held:", 1);

    await client.runs.cancel(thread.thread_id, continued.run_id, true, "rollback");

    expect((await client.threads.get(thread.thread_id)).status).toBe("interrupted");
    const state = await client.threads.getState<{ done: string[] }>(thread.thread_id);
    expect(state.next).toEqual(["step"]);
    expect(state.values.done).toEqual([]);
  });

  it("deleting a thread stops its running run and deletes every run record of it", async () => {
    const { client } = server;
    const service = server.runs.service();
    const thread = await client.threads.create();
    const finished = await client.runs.create(thread.thread_id, "steps", steps("done"));
    await client.runs.join(thread.thread_id, finished.run_id);
    const running = await client.runs.create(thread.thread_id, "steps", steps("long", 1, 30_000));
    const pending = await client.runs.create(thread.thread_id, "steps", steps("queued"));
    await waitForStatus(client, thread.thread_id, running.run_id, "running");

    await client.threads.delete(thread.thread_id);

    await expect(client.threads.get(thread.thread_id)).rejects.toThrow(/404/);
    expect(await service.find(finished.run_id)).toBeUndefined();
    expect(await service.find(pending.run_id)).toBeUndefined();
    await waitUntil(async () => (await service.find(running.run_id)) === undefined, "the running run is gone", 3000);
    expect(await service.recent(thread.thread_id, 10)).toEqual([]);
    const { checkpointer } = server.server.ctx.storage;
    expect(await checkpointer.getTuple({ configurable: { thread_id: thread.thread_id } })).toBeUndefined();
  });

  it("pruning threads with the delete strategy deletes their runs too", async () => {
    const { client } = server;
    const service = server.runs.service();
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, "steps", steps("done"));
    await client.runs.join(thread.thread_id, run.run_id);
    const response = await fetch(`${server.url}/threads/prune`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ thread_ids: [thread.thread_id], strategy: "delete" }),
    });
    expect(await response.json()).toEqual({ pruned_count: 1 });
    expect(await service.find(run.run_id)).toBeUndefined();
  });

  it("the thread stream replays from Last-Event-ID '-', resumes after any event id, and filters by stream mode", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const first = await client.runs.create(thread.thread_id, "agent", { input: hello("first") });
    await client.runs.join(thread.thread_id, first.run_id);
    const second = await client.runs.create(thread.thread_id, "agent", { input: hello("second") });
    await client.runs.join(thread.thread_id, second.run_id);

    const all = await threadEvents(thread.thread_id, { lastEventId: "-" }, (events) => count(events, "run_done") === 2);
    expect(all.map((event) => event.event)).toEqual([
      "metadata",
      "values",
      "values",
      "run_done",
      "metadata",
      "values",
      "values",
      "run_done",
    ]);
    expect(all[0]).toMatchObject({ id: `${first.run_id}:0`, data: { run_id: first.run_id } });
    expect(all[3]?.data).toEqual({ run_id: first.run_id, status: "success" });
    expect(all[4]?.data).toMatchObject({ run_id: second.run_id });

    for (const from of [1, 3, 5]) {
      const rest = all.slice(from + 1);
      const resumed = await threadEvents(
        thread.thread_id,
        { lastEventId: all[from]?.id },
        (events) => events.length === rest.length,
      );
      expect(resumed).toEqual(rest);
    }

    const lifecycle = await threadEvents(
      thread.thread_id,
      { lastEventId: "-", streamMode: "lifecycle" },
      (events) => events.length === 4,
    );
    expect(lifecycle.map((event) => [event.event, (event.data as { run_id: string }).run_id])).toEqual([
      ["metadata", first.run_id],
      ["run_done", first.run_id],
      ["metadata", second.run_id],
      ["run_done", second.run_id],
    ]);
    const updates = await threadEvents(
      thread.thread_id,
      { lastEventId: "-", streamMode: "state_update" },
      (events) => events.length === 4,
    );
    expect(updates.map((event) => event.event)).toEqual(["values", "values", "values", "values"]);
    expect(updates.at(-1)?.data).toMatchObject({ messages: { length: 4 } });
  });

  it("the thread stream without Last-Event-ID starts with the runs in flight and follows new ones", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "agent", { input: hello("old") });
    const inflight = await client.runs.create(thread.thread_id, "steps", {
      input: { steps: 1, delay_ms: 30_000, label: "slow" },
    });
    await waitForStatus(client, thread.thread_id, inflight.run_id, "running");
    let following!: () => void;
    const streaming = new Promise<void>((resolve) => {
      following = resolve;
    });
    const live = threadEvents(thread.thread_id, { streamMode: ["lifecycle"] }, (events) => {
      following();
      return events.length === 4;
    });
    // The in-flight run's first event: the stream has chosen where to start, so what comes next is new.
    await streaming;
    const run = await client.runs.create(thread.thread_id, "agent", { input: hello("new") });
    await client.runs.cancel(thread.thread_id, inflight.run_id);
    const events = await live;
    expect(events.map((event) => [event.event, (event.data as { run_id: string }).run_id])).toEqual([
      ["metadata", inflight.run_id],
      ["run_done", inflight.run_id],
      ["metadata", run.run_id],
      ["run_done", run.run_id],
    ]);
  });
});
