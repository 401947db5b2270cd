import { setTimeout as sleep } from "node:timers/promises";
import type { Config } from "@langchain/langgraph-sdk";
import { createClient } from "redis";
import { describe, expect, it } from "vitest";
import { testRedisUrl } from "../../testing/redis.ts";
import { agentsProject, collect, outcome, sdkSuites, threadState, useCompatServers } from "./harness.ts";

/** Interrupts and commands, run config as clients send it, and state objects sent back as they came. */

const servers = useCompatServers(agentsProject);

sdkSuites.concurrent((sdk) => {
  describe("human in the loop through a subgraph", () => {
    it("runs.wait of an interrupted run answers {__interrupt__}; the state shows the subgraph waiting", async () => {
      const { ours } = await servers.compare(sdk, async ({ client }) => {
        const thread = await client.threads.create();
        const waited = await client.runs.wait(thread.thread_id, "review", { input: { topic: "otters" } });
        const fetched = await client.threads.get(thread.thread_id);
        const state = threadState(await client.threads.getState(thread.thread_id, undefined, { subgraphs: true }));
        const resumed = await client.runs.wait(thread.thread_id, "review", { command: { resume: "yes" } });
        const final = threadState(await client.threads.getState(thread.thread_id));
        return { waited, status: fetched.status, interrupts: fetched.interrupts, state, resumed, final };
      });
      // What a waiting client sees: the question, not a finished-looking state.
      expect(ours).toMatchObject({
        waited: { __interrupt__: [{ value: { question: "Publish this draft?" } }] },
        status: "interrupted",
        resumed: { published: true, verdict: "yes" },
      });
    });

    it("task and state checkpoints from GET state are accepted back: state at, update, history, run from", async () => {
      const { ours } = await servers.compare(sdk, async ({ client }) => {
        const thread = await client.threads.create();
        const id = thread.thread_id;
        await client.runs.wait(id, "review", { input: { topic: "otters" } });
        const state = await client.threads.getState(id, undefined, { subgraphs: true });
        const task = state.tasks[0];
        const taskCheckpoint = task?.checkpoint ?? task?.state?.checkpoint;
        if (!taskCheckpoint || !state.checkpoint) throw new Error("no checkpoint to send back");
        const subgraph = threadState(await client.threads.getState(id, taskCheckpoint));
        const history = (await client.threads.getHistory(id, { checkpoint: taskCheckpoint, limit: 5 })).map(
          threadState,
        );
        const updated = await outcome(
          client.threads.updateState(id, { values: { draft: "Edited" }, checkpoint: taskCheckpoint }),
        );
        const rerun = await client.runs.wait(id, "review", { input: null, checkpoint: state.checkpoint });
        return { subgraph, history, updated, rerun };
      });
      expect(ours).toHaveProperty("updated.ok");
    });

    it("the nulls GET state returns are accepted in a state update (ours; the reference refuses checkpoint_id null)", async () => {
      await servers.run("ours", sdk, async ({ client, server }) => {
        const thread = await client.threads.create();
        await client.runs.wait(thread.thread_id, "review", { input: { topic: "otters" } });
        // Without subgraphs a subgraph task has a checkpoint (with them, its state).
        const state = await client.threads.getState(thread.thread_id);
        const checkpoint = state.tasks[0]?.checkpoint;
        expect(checkpoint).toMatchObject({ checkpoint_id: null, checkpoint_map: null });
        // As a client sends back what it got: every field, nulls included (the SDK leaves out what is undefined).
        const response = await fetch(`${server.url}/threads/${thread.thread_id}/state`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ values: { draft: "Edited" }, checkpoint, checkpoint_id: null }),
        });
        expect(response.status).toBe(200);
      });
    });

    it("interrupt_before and interrupt_after stop the run; a run with no input continues it", async () => {
      await servers.compare(sdk, async ({ client }) => {
        const thread = await client.threads.create();
        const id = thread.thread_id;
        const before = await client.runs.wait(id, "counter", { input: {}, interruptBefore: ["double"] });
        const beforeState = threadState(await client.threads.getState(id));
        const continued = await client.runs.wait(id, "counter", { input: null });
        const other = await client.threads.create();
        const after = await collect(
          client.runs.stream(other.thread_id, "counter", {
            input: {},
            interruptAfter: ["increment"],
            streamMode: "updates",
          }),
        );
        const afterState = threadState(await client.threads.getState(other.thread_id));
        return { before, beforeState, continued, after, afterState };
      });
    });

    it("a Command with update and goto", async () => {
      await servers.compare(sdk, async ({ client }) => {
        const thread = await client.threads.create();
        await client.runs.wait(thread.thread_id, "review", { input: { topic: "otters" } });
        const events = await collect(
          client.runs.stream(thread.thread_id, "review", {
            command: { update: { verdict: "yes" }, goto: "publish" },
            streamMode: ["updates", "values"],
          }),
        );
        return { events, final: threadState(await client.threads.getState(thread.thread_id)) };
      });
    });
  });

  describe("run config as clients send it", () => {
    it("config.recursion_limit ends a looping graph with GraphRecursionError and the thread in error", async () => {
      let oursValuesAreState = false;
      const { ours } = await servers.compare(sdk, async ({ client, server }) => {
        const thread = await client.threads.create();
        const id = thread.thread_id;
        // Within the default limit (25) the loop ends by itself.
        const unlimited = await client.runs.wait(id, "loop", { input: { until: 10, count: 0 } });
        const run = await client.runs.create(id, "loop", {
          input: { until: 10, count: 0 },
          config: { recursion_limit: 5 },
        });
        const events = await collect(client.runs.joinStream(id, run.run_id));
        const ended = await client.runs.get(id, run.run_id);
        const fetched = await client.threads.get(id);
        const error = events.find(({ event }) => event === "error");
        const state = (await client.threads.getState(id)).values;
        // thread.values after the failure: ours is the latest state, the reference's a step older (docs/compatibility.md).
        if (server.kind === "ours") oursValuesAreState = JSON.stringify(fetched.values) === JSON.stringify(state);
        return { unlimited, runStatus: ended.status, threadStatus: fetched.status, state, error };
      });
      expect(oursValuesAreState).toBe(true);
      expect(ours).toMatchObject({
        state: { count: 5 },
        unlimited: { count: 10 },
        runStatus: "error",
        threadStatus: "error",
        error: { data: { error: "GraphRecursionError" } },
      });
    });

    it("tags, configurable and recursion_limit reach the graph's nodes", async () => {
      await servers.compare(sdk, async ({ client }) =>
        client.runs.wait(null, "echo_config", {
          input: {},
          config: { tags: ["compat"], recursion_limit: 7, configurable: { topic: "otters" } },
        }),
      );
    });

    it("max_concurrency and run_name reach LangGraph.js on ours (the reference drops them)", async () => {
      // As the Python SDK sends them; the JS SDK's Config type does not declare these keys.
      const config = { max_concurrency: 3, run_name: "compat-run" } as Config;
      const run = (kind: "reference" | "ours") =>
        servers.run(kind, sdk, async ({ client }) => {
          const events = await collect(
            client.runs.stream(null, "echo_config", { input: {}, config, streamMode: ["events", "values"] }),
          );
          const start = events.find(
            ({ event, data }) => event === "events" && (data as { event: string }).event === "on_chain_start",
          );
          const values = events.filter(({ event }) => event === "values").at(-1)?.data as {
            seen: Record<string, unknown>;
          };
          return { rootName: (start?.data as { name: string }).name, maxConcurrency: values.seen.max_concurrency };
        });
      expect(await run("ours")).toEqual({ rootName: "compat-run", maxConcurrency: 3 });
      expect(await run("reference")).toEqual({ rootName: "LangGraph", maxConcurrency: null });
    });
  });

  it("every checkpoint of a thread created with supersteps names its graph and writes (ours)", async () => {
    await servers.run("ours", sdk, async ({ client }) => {
      const thread = await client.threads.create({
        graphId: "counter",
        supersteps: [
          { updates: [{ values: { count: 1 }, asNode: "increment" }] },
          { updates: [{ values: { count: 2 }, asNode: "double" }] },
        ],
      });
      const history = await client.threads.getHistory(thread.thread_id);
      expect(history.map((state) => state.metadata)).toEqual([
        expect.objectContaining({ graph_id: "counter", source: "update", writes: { double: { count: 2 } } }),
        expect.objectContaining({ graph_id: "counter", source: "update", writes: { increment: { count: 1 } } }),
      ]);
      expect((await client.threads.getState(thread.thread_id)).values).toEqual({ count: 3, log: [] });
    });
  });
});

sdkSuites.concurrent((sdk) => {
  it("a conversation long enough that ours packs its old checkpoints and archives its old runs", async () => {
    // 45 runs of the counter: several checkpoints each, past both thresholds
    // (checkpoint/redis-segments.ts, runs/queue/redis-archive.ts); the first packs and
    // archives are done long before the reads below.
    let ours = "";
    await servers.compare(sdk, async ({ client, server }) => {
      const { thread_id: id } = await client.threads.create();
      if (server.kind === "ours") ours = id;
      // Each queued once the one before has started: with several pending, the reference may
      // start them out of order (docs/compatibility.md). A wait per run would take ~0.5 s each there.
      let last = "";
      for (let i = 0; i < 45; i++) {
        const run = await client.runs.create(id, "counter", {
          input: {},
          metadata: { turn: i },
          multitaskStrategy: "enqueue",
        });
        last = run.run_id;
        while ((await client.runs.get(id, last)).status === "pending") await sleep(10);
      }
      await client.runs.join(id, last);
      const states = await client.threads.getHistory(id, { limit: 1000 });
      const idAt = (index: number) => states[index]?.checkpoint.checkpoint_id as string;
      // The reference takes `before` as a checkpoint id only, not the config the SDK's type says.
      const old = await client.threads.getHistory(id, { limit: 3, before: idAt(100) as never });
      const atOldest = threadState(await client.threads.getState(id, idAt(states.length - 2)));
      // Oldest first: the reference lists runs in the order it stored them, ours newest first.
      const runs = (await client.runs.list(id, { limit: 100 })).sort((a, b) =>
        a.created_at.localeCompare(b.created_at),
      );
      const first = await client.runs.get(id, (runs[0] as { run_id: string }).run_id);
      return {
        count: states.length,
        history: states.map(threadState),
        old: old.map(threadState),
        atOldest,
        runs,
        first,
      };
    });
    // Ours answered from segments and archives, not from keys that were never moved.
    const redis = createClient({ url: testRedisUrl() });
    await redis.connect();
    const moved = async (pattern: string) => (await redis.keys(pattern)).length;
    expect(await moved(`compat-*cp:seg:*${ours}*`)).toBe(1);
    expect(await moved(`compat-*runs:arc:${ours}`)).toBe(1);
    await redis.quit();
  });
});
