import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { METADATA_MAX_KEYS } from "../schemas/common.ts";
import { type ApiServer, startApiServer, storageBackends } from "../storage/testing/api-server.ts";

const backends = storageBackends("threads-http");

describe.each(backends)("thread routes on %s storage", (_kind, makeStorage) => {
  let api: ApiServer;
  let client: Client;
  beforeAll(async () => {
    api = await startApiServer(await makeStorage());
    client = new Client({ apiUrl: api.url, callerOptions: { maxRetries: 0 } });
  });
  afterAll(() => api.close());

  const call = (method: string, path: string, body?: unknown) => api.call(method, path, body);
  /** Runs the echo graph on a thread, so it has checkpoints and values. */
  const runOn = async (threadId: string, topic: string) => {
    const graph = await api.ctx.graphs.get("agent");
    const values = await graph.invoke({ topic }, { configurable: { thread_id: threadId } });
    return api.ctx.storage.threads.update(threadId, { values, state_updated: true });
  };
  const checkpointCount = async (threadId: string) => {
    let count = 0;
    for await (const _ of api.ctx.storage.checkpointer.list({ configurable: { thread_id: threadId } })) count++;
    return count;
  };

  it("creates, reads, patches and deletes a thread with its checkpoints", async () => {
    const threadId = crypto.randomUUID();
    const created = await client.threads.create({ threadId, graphId: "agent", metadata: { user: "u1" } });
    expect(created).toMatchObject({ thread_id: threadId, status: "idle", metadata: { user: "u1", graph_id: "agent" } });
    await expect(client.threads.create({ threadId })).rejects.toMatchObject({ status: 409 });
    expect(await client.threads.create({ threadId, ifExists: "do_nothing" })).toEqual(created);
    expect(await client.threads.get(threadId)).toEqual(created);

    const patched = await client.threads.update(threadId, { metadata: { tier: "gold" } });
    expect(patched.metadata).toEqual({ user: "u1", graph_id: "agent", tier: "gold" });

    await runOn(threadId, "tea");
    expect(await checkpointCount(threadId)).toBeGreaterThan(0);
    await client.threads.delete(threadId);
    await expect(client.threads.get(threadId)).rejects.toMatchObject({ status: 404 });
    expect(await checkpointCount(threadId)).toBe(0);
  });

  it("replays supersteps into a new thread", async () => {
    const thread = await client.threads.create({
      graphId: "agent",
      supersteps: [
        { updates: [{ values: { topic: "tea" }, asNode: "__input__" }] },
        { updates: [{ values: { topic: "tea" }, asNode: "__start__" }] },
        { updates: [{ values: { reply: "imported" }, asNode: "respond" }] },
      ],
    });
    expect(thread.values).toEqual({ topic: "tea", reply: "imported" });
    expect(await checkpointCount(thread.thread_id)).toBe(3);
  });

  it("removes the thread again when supersteps cannot be applied", async () => {
    const threadId = crypto.randomUUID();
    const res = await call("POST", "/threads", {
      thread_id: threadId,
      supersteps: [{ updates: [{ values: { topic: "x" }, as_node: "__input__" }] }],
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe(`Thread ${threadId} has no graph ID`);
    expect((await call("GET", `/threads/${threadId}`)).status).toBe(404);
  });

  it("copies a thread with its checkpoints to a new id", async () => {
    const source = await client.threads.create({ graphId: "agent", metadata: { user: "copier" } });
    await runOn(source.thread_id, "coffee");
    const copy = await client.threads.copy(source.thread_id);
    expect(copy.thread_id).not.toBe(source.thread_id);
    expect(copy).toMatchObject({
      status: "idle",
      metadata: { user: "copier", graph_id: "agent", thread_id: copy.thread_id },
      values: { topic: "coffee", reply: "about coffee" },
    });
    expect(await checkpointCount(copy.thread_id)).toBe(await checkpointCount(source.thread_id));
    const graph = await api.ctx.graphs.get("agent");
    const state = await graph.getState({ configurable: { thread_id: copy.thread_id } });
    expect(state.values).toEqual({ topic: "coffee", reply: "about coffee" });
  });

  it("searches with filters, sort and pagination headers, and counts", async () => {
    const tag = crypto.randomUUID();
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await client.threads.create({ metadata: { tag, i } }));
    await api.ctx.storage.threads.update(made[1]?.thread_id as string, { status: "busy" });
    const found = await client.threads.search({ metadata: { tag }, sortBy: "created_at", sortOrder: "asc" });
    expect(found.map((t) => t.thread_id)).toEqual(made.map((t) => t.thread_id));
    expect((await client.threads.search({ metadata: { tag }, status: "busy" })).map((t) => t.metadata?.i)).toEqual([1]);
    const page = await call("POST", "/threads/search", { metadata: { tag }, limit: 2, sort_by: "thread_id" });
    expect(page.headers.get("x-pagination-total")).toBe("3");
    expect(page.headers.get("x-pagination-next")).toBe("2");
    const selected = await client.threads.search({ metadata: { tag, i: 2 }, select: ["thread_id", "status"] });
    expect(selected).toEqual([{ thread_id: made[2]?.thread_id, status: "idle" }]);
    const nulls = await call("POST", "/threads/search", { metadata: { tag }, status: null, values: null, ids: null });
    expect(nulls.body).toHaveLength(3);
    expect(await client.threads.count({ metadata: { tag } })).toBe(3);
    expect(await client.threads.count({ metadata: { tag }, status: "idle" })).toBe(2);
  });

  it("prunes threads by deleting them or keeping only the latest checkpoint", async () => {
    const kept = await client.threads.create({ graphId: "agent" });
    const gone = await client.threads.create({ graphId: "agent" });
    for (const thread of [kept, gone]) {
      await runOn(thread.thread_id, "one");
      await runOn(thread.thread_id, "two");
    }
    const before = await checkpointCount(kept.thread_id);
    const latest = await call("POST", "/threads/prune", { thread_ids: [kept.thread_id], strategy: "keep_latest" });
    expect(latest.body).toEqual({ pruned_count: 1 });
    expect(before).toBeGreaterThan(1);
    expect(await checkpointCount(kept.thread_id)).toBe(1);
    expect((await client.threads.get(kept.thread_id)).values).toEqual({ topic: "two", reply: "about two" });
    const deleted = await call("POST", "/threads/prune", { thread_ids: [gone.thread_id, crypto.randomUUID()] });
    expect(deleted.body).toEqual({ pruned_count: 1 });
    expect((await call("GET", `/threads/${gone.thread_id}`)).status).toBe(404);
    expect(await checkpointCount(gone.thread_id)).toBe(0);
  });

  it("answers malformed requests with JSON 4xx and changes nothing", async () => {
    const kept = await client.threads.create({ metadata: { keep: true } });
    const id = kept.thread_id;
    const missing = crypto.randomUUID();
    const before = await client.threads.count();
    const cases: [string, string, unknown, number][] = [
      ["POST", "/threads", "{not json", 422],
      ["POST", "/threads", { thread_id: "abc" }, 422],
      ["POST", "/threads", { metadata: [1, 2] }, 422],
      ["POST", "/threads", { if_exists: "overwrite" }, 422],
      ["POST", "/threads", { supersteps: [{ updates: [{ values: {} }] }] }, 422],
      ["POST", "/threads", { thread_id: id }, 409],
      ["POST", "/threads/search", { limit: 0 }, 422],
      ["POST", "/threads/search", { limit: 1001 }, 422],
      ["POST", "/threads/search", { status: "sleeping" }, 422],
      ["POST", "/threads/search", { ids: ["x"] }, 422],
      ["POST", "/threads/search", { sort_by: "values" }, 422],
      ["POST", "/threads/count", { values: 3 }, 422],
      ["POST", "/threads/prune", {}, 422],
      ["POST", "/threads/prune", { thread_ids: [id], strategy: "all" }, 422],
      ["GET", "/threads/not-a-uuid", undefined, 422],
      ["GET", `/threads/${missing}`, undefined, 404],
      ["PATCH", `/threads/${id}`, { metadata: "x" }, 422],
      ["PATCH", `/threads/${missing}`, { metadata: {} }, 404],
      ["DELETE", `/threads/${missing}`, undefined, 404],
      ["DELETE", "/threads/123", undefined, 422],
      ["POST", `/threads/${missing}/copy`, undefined, 404],
    ];
    for (const [method, path, body, status] of cases) {
      const res = await call(method, path, body);
      expect({ method, path, body, status: res.status }).toEqual({ method, path, body, status });
      if (status === 422)
        expect(res.body.detail[0]).toMatchObject({ loc: expect.any(Array), type: expect.any(String) });
      else expect(typeof res.body.detail).toBe("string");
    }
    const missingDetail = await call("GET", `/threads/${missing}`);
    expect(missingDetail.body).toEqual({ detail: `Thread with ID ${missing} not found` });
    expect(await client.threads.get(id)).toEqual(kept);
    expect(await client.threads.count()).toBe(before);
  });

  it("bounds metadata after the merge: a PATCH that widens it past the limit is a 422 and changes nothing", async () => {
    const keys = (from: number, count: number) =>
      Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${from + i}`, from + i]));
    const thread = (await call("POST", "/threads", { metadata: keys(0, 100) })).body;
    const assistant = (await call("POST", "/assistants", { graph_id: "agent", metadata: keys(0, 100) })).body;
    for (const path of [`/threads/${thread.thread_id}`, `/assistants/${assistant.assistant_id}`]) {
      expect((await call("PATCH", path, { metadata: keys(100, METADATA_MAX_KEYS - 100) })).status).toBe(200);
      const stored = (await call("GET", path)).body;
      const refused = await call("PATCH", path, { metadata: { one_more: 1 } });
      expect(refused).toMatchObject({
        status: 422,
        body: { detail: [{ loc: ["body", "metadata"], msg: expect.stringContaining("129 keys"), type: "too_long" }] },
      });
      expect((await call("GET", path)).body).toEqual(stored);
      // Keys already there may still change.
      const changed = await call("PATCH", path, { metadata: { k0: "changed" } });
      expect(changed.body.metadata).toMatchObject({ k0: "changed" });
      expect(Object.keys(changed.body.metadata)).toHaveLength(METADATA_MAX_KEYS);
    }
  });

  it("checks concurrent metadata PATCHes against the record each replaces: the limit holds", async () => {
    const thread = (await call("POST", "/threads", {})).body;
    const batch = (n: number) => Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`b${n}-${i}`, i]));
    const results = await Promise.all(
      [0, 1, 2, 3].map((n) => call("PATCH", `/threads/${thread.thread_id}`, { metadata: batch(n) })),
    );
    expect(results.map(({ status }) => status).sort()).toEqual([200, 200, 422, 422]);
    expect(Object.keys((await client.threads.get(thread.thread_id)).metadata ?? {})).toHaveLength(100);
  });
});
