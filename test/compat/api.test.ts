import { describe, expect, it } from "vitest";
import { agentsProject, collect, outcome, sdkSuites, threadState, useCompatServers } from "./harness.ts";

/** Every endpoint the SDK's assistants, threads, runs, store and crons clients call, on both servers. */

const servers = useCompatServers(agentsProject);

sdkSuites((sdk) => {
  describe("assistants", () => {
    it("create, get, update, versions, latest, search, count, graph, subgraphs, delete", async () => {
      await servers.compare(sdk, async ({ client }) => {
        const created = await client.assistants.create({
          graphId: "counter",
          name: "stepper",
          config: { configurable: { step: 2 } },
          metadata: { team: "compat" },
        });
        const id = created.assistant_id;
        const updated = await client.assistants.update(id, { metadata: { team: "compat", v: 2 }, name: "stepper-2" });
        const versions = await client.assistants.getVersions(id);
        const latest = await client.assistants.setLatest(id, 1);
        const found = await client.assistants.search({ metadata: { team: "compat" } });
        const byGraph = await client.assistants.search({ graphId: "counter", limit: 10 });
        const count = await client.assistants.count({ graphId: "counter" });
        const graph = await client.assistants.getGraph(id);
        const xray = await client.assistants.getGraph("review", { xray: true });
        // Which subgraphs, not their schemas: the reference answers {input, output, state, config}
        // where the SDK's type (and ours) says {graph_id, input_schema, …} (docs/compatibility.md).
        const subgraphs = Object.keys(await client.assistants.getSubgraphs("review"));
        const fetched = await client.assistants.get(id);
        await client.assistants.delete(id);
        const gone = await outcome(client.assistants.get(id));
        return { created, updated, versions, latest, found, byGraph, count, graph, xray, subgraphs, fetched, gone };
      });
    });

    it("the default assistant of each graph", async () => {
      await servers.compare(sdk, async ({ client }) => {
        const all = await client.assistants.search({ limit: 100 });
        return all
          .filter((assistant) => assistant.metadata?.created_by === "system")
          .sort((a, b) => a.graph_id.localeCompare(b.graph_id));
      });
    });

    it("unknown ids and graphs are 404s and bad bodies 4xx", async () => {
      await servers.compare(sdk, async ({ client }) => ({
        missing: await outcome(client.assistants.get("00000000-0000-4000-8000-000000000000")),
      }));
      // A body the schema refuses: 422 on ours (as the Python server), 400 on the reference.
      const badLimit = (kind: "reference" | "ours") =>
        servers.run(kind, sdk, ({ client }) => outcome(client.assistants.search({ limit: -1 })));
      expect(await badLimit("ours")).toEqual({ status: 422 });
      expect(await badLimit("reference")).toEqual({ status: 400 });
      // The reference creates an assistant for a graph it does not have; ours answers 404 (docs/compatibility.md).
      const noGraph = (kind: "reference" | "ours") =>
        servers.run(kind, sdk, ({ client }) => outcome(client.assistants.create({ graphId: "no_such_graph" })));
      expect(await noGraph("ours")).toEqual({ status: 404 });
      expect(await noGraph("reference")).toHaveProperty("ok.graph_id", "no_such_graph");
    });
  });

  describe("threads", () => {
    it("create, get, update, search, count, copy, state, history, patch, delete", async () => {
      await servers.compare(sdk, async ({ client }) => {
        const thread = await client.threads.create({ metadata: { owner: "compat" } });
        const id = thread.thread_id;
        const updated = await client.threads.update(id, { metadata: { owner: "compat", round: 1 } });
        const waited = await client.runs.wait(id, "counter", { input: {}, config: { configurable: { step: 3 } } });
        const state = threadState(await client.threads.getState(id));
        const past = await client.threads.getHistory(id, { limit: 10 });
        const history = past.map(threadState);
        const first = past.at(-1)?.checkpoint;
        const atFirst = first ? threadState(await client.threads.getState(id, first)) : undefined;
        const update = await client.threads.updateState(id, { values: { count: 5 }, asNode: "double" });
        // PATCH /threads/{id}/state: neither server implements it (docs/compatibility.md).
        const patched = await outcome(client.threads.patchState(id, { reviewed: true }));
        const copy = await client.threads.copy(id);
        const copyState = threadState(await client.threads.getState(copy.thread_id));
        // Without values: the reference's copy has none until it runs, ours has its source's (docs/compatibility.md).
        const search = (await client.threads.search({ metadata: { owner: "compat", round: 1 }, limit: 10 })).map(
          ({ values: _values, config: _config, ...rest }) => rest,
        );
        const count = await client.threads.count({ metadata: { owner: "compat", round: 1 } });
        // Without config: the reference keeps the last run's forwarded headers in it (docs/compatibility.md).
        const { config: _config, ...fetched } = await client.threads.get(id);
        await client.threads.delete(copy.thread_id);
        const gone = await outcome(client.threads.get(copy.thread_id));
        return {
          thread,
          updated,
          waited,
          state,
          history,
          atFirst,
          update,
          patched,
          copy: { ...copy, values: undefined },
          copyState,
          search,
          count,
          fetched,
          gone,
        };
      });
    });

    it("state and history of a conversation long enough to be read from its stored texts", async () => {
      await servers.compare(
        sdk,
        async ({ client }) => {
          const { thread_id: id } = await client.threads.create();
          // Twelve earlier questions in one input (the scripted chat model answers one turn), then its answer.
          const asked = Array.from({ length: 12 }, (_, i) => ({ role: "user", content: `question ${i}: "q", [b]` }));
          const answer = await client.runs.wait(id, "chat", { input: { messages: asked } });
          const state = threadState(await client.threads.getState(id));
          const past = await client.threads.getHistory(id, { limit: 10 });
          const older = past.at(-1)?.checkpoint;
          const atOlder = older ? threadState(await client.threads.getState(id, older)) : undefined;
          return { answer, state, history: past.map(threadState), atOlder };
        },
        {
          ignoreKeys: {
            // Both in docs/compatibility.md; dropped before ids are numbered, since `writes` holds message ids.
            writes: "checkpoint metadata records each step's writes (LangGraph.js 1.x no longer does)",
            tool_call_chunks: "the reference streams every model, so its stored AI messages are chunks",
          },
        },
      );
    });

    it("a thread created with supersteps", async () => {
      await servers.compare(sdk, async ({ client }) => {
        const thread = await client.threads.create({
          graphId: "counter",
          supersteps: [
            { updates: [{ values: { count: 1 }, asNode: "increment" }] },
            { updates: [{ values: { count: 1 }, asNode: "double" }] },
          ],
        });
        const history = (await client.threads.getHistory(thread.thread_id)).map(threadState);
        return { thread, history };
      });
    });
  });

  describe("runs", () => {
    it("create, get, list, join, joinStream, wait, stream, delete", async () => {
      await servers.compare(sdk, async ({ client }) => {
        const thread = await client.threads.create();
        const id = thread.thread_id;
        // Explicit strategy: the defaults differ (see the next test).
        const multitaskStrategy = "enqueue" as const;
        const run = await client.runs.create(id, "counter", {
          input: {},
          metadata: { purpose: "compat" },
          multitaskStrategy,
        });
        const joined = await client.runs.join(id, run.run_id);
        const fetched = await client.runs.get(id, run.run_id);
        const waited = await client.runs.wait(id, "counter", { input: {}, multitaskStrategy });
        const streamed = await collect(
          client.runs.stream(id, "counter", { input: {}, streamMode: "updates", multitaskStrategy }),
        );
        // Oldest first: the reference lists runs in the order it stored them, ours newest first.
        const listed = (await client.runs.list(id)).sort((a, b) => a.created_at.localeCompare(b.created_at));
        await client.runs.delete(id, run.run_id);
        const gone = await outcome(client.runs.get(id, run.run_id));
        return { run, joined, fetched, waited, streamed, listed, gone };
      });
    });

    it("the default multitask strategy: reject on the reference, enqueue on ours", async () => {
      const strategy = (kind: "reference" | "ours") =>
        servers.run(kind, sdk, async ({ client }) => {
          const thread = await client.threads.create();
          return (await client.runs.create(thread.thread_id, "counter", { input: {} })).multitask_strategy;
        });
      expect(await strategy("reference")).toBe("reject");
      expect(await strategy("ours")).toBe("enqueue");
    });

    it("stateless runs: wait, stream, batch", async () => {
      await servers.compare(sdk, async ({ client }) => {
        const waited = await client.runs.wait(null, "counter", { input: {} });
        const streamed = await collect(client.runs.stream(null, "counter", { input: {}, streamMode: "values" }));
        const batch = await client.runs.createBatch([
          { assistantId: "counter", input: {} },
          { assistantId: "loop", input: { until: 1 } },
        ]);
        return { waited, streamed, batch: batch.map(({ status, assistant_id }) => ({ status, assistant_id })) };
      });
    });

    it("cancel a pending run behind a running one", async () => {
      await servers.compare(sdk, async ({ client }) => {
        const thread = await client.threads.create();
        // Running for ~0.5 s: the cancel reaches the second run while it waits, however loaded the machine.
        const first = await client.runs.create(thread.thread_id, "loop", { input: { until: 5, tick_ms: 100 } });
        const second = await client.runs.create(thread.thread_id, "counter", {
          input: {},
          multitaskStrategy: "enqueue",
        });
        await client.runs.cancel(thread.thread_id, second.run_id, true);
        await client.runs.join(thread.thread_id, first.run_id);
        const cancelled = await client.runs.get(thread.thread_id, second.run_id);
        return { status: cancelled.status };
      });
    });

    it("a run on a missing assistant is a 404; on a missing thread 404 on ours, 422 on the reference", async () => {
      await servers.compare(sdk, async ({ client }) => ({
        assistant: await outcome(client.runs.wait(null, "no_such_graph", { input: {} })),
      }));
      const missingThread = (kind: "reference" | "ours") =>
        servers.run(kind, sdk, ({ client }) =>
          outcome(client.runs.wait("00000000-0000-4000-8000-000000000000", "counter", { input: {} })),
        );
      expect(await missingThread("ours")).toEqual({ status: 404 });
      expect(await missingThread("reference")).toEqual({ status: 422 });
    });
  });

  describe("store", () => {
    it("put, get, search, list namespaces, delete", async () => {
      await servers.compare(sdk, async ({ client }) => {
        // Namespace labels cannot contain dots.
        const ns = ["compat", "users", sdk.version.replaceAll(".", "_")];
        await client.store.putItem(ns, "alice", { lang: "en", score: 3 });
        await client.store.putItem(ns, "bob", { lang: "fr", score: 5 });
        await client.store.putItem([...ns, "prefs"], "alice", { theme: "dark" });
        const item = await client.store.getItem(ns, "alice");
        const all = await client.store.searchItems(ns, { limit: 10 });
        const filtered = await client.store.searchItems(ns, { filter: { lang: "fr" } });
        const namespaces = await client.store.listNamespaces({ prefix: ["compat", "users"] });
        await client.store.deleteItem(ns, "bob");
        const deleted = await client.store.getItem(ns, "bob");
        // The order of unranked search results differs (docs/compatibility.md): compare them sorted.
        const sorted = (items: { namespace: string[]; key: string }[]) =>
          [...items].sort((a, b) =>
            `${a.namespace.join(".")}/${a.key}`.localeCompare(`${b.namespace.join(".")}/${b.key}`),
          );
        return { item, all: sorted(all.items), filtered, namespaces, deleted };
      });
    });
  });

  describe("crons", () => {
    // The reference in-memory server answers every cron endpoint with 500 "Not implemented":
    // there is nothing to compare, so this checks that and runs the calls on our server alone.
    it("the reference does not implement crons; ours does", async () => {
      const reference = await servers.run("reference", sdk, async ({ client }) => ({
        create: await outcome(client.crons.create("counter", { schedule: "0 0 * * *", input: {} })),
        search: await outcome(client.crons.search({})),
      }));
      expect(reference).toEqual({ create: { status: expect.any(Number) }, search: { status: 500 } });
      await servers.run("ours", sdk, async ({ client }) => {
        const thread = await client.threads.create();
        const cron = await client.crons.create("counter", { schedule: "0 0 * * *", input: {} });
        const threadCron = await client.crons.createForThread(thread.thread_id, "counter", { schedule: "0 0 * * *" });
        expect(await client.crons.count({ assistantId: cron.assistant_id })).toBeGreaterThanOrEqual(2);
        const found = await client.crons.search({ assistantId: cron.assistant_id, limit: 100 });
        expect(found.map((c) => c.cron_id)).toEqual(expect.arrayContaining([cron.cron_id, threadCron.cron_id]));
        const updated = await client.crons.update(cron.cron_id, { schedule: "0 1 * * *" });
        expect(updated.schedule).toBe("0 1 * * *");
        await client.crons.delete(cron.cron_id);
        await client.crons.delete(threadCron.cron_id);
        expect(await outcome(client.crons.update(cron.cron_id, { schedule: "0 2 * * *" }))).toEqual({ status: 404 });
      });
    });
  });
});
