import { createLogger } from "@agentplane/common";
import { beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../config.ts";
import type { ServerContext } from "../context.ts";
import { fixtureConfig } from "../graphs/testing/server.ts";
import { createMemoryStorage } from "../storage/memory.ts";
import { echoGraphRegistry } from "../storage/testing/api-server.ts";
import type { Thread } from "../storage/types.ts";
import { jsonText } from "../stream/references.ts";
import { ThreadService } from "./service.ts";
import type { ThreadState } from "./state.ts";

/** The rules the thread service owns, on in-memory storage with the echo graph (`agent`). */
describe("ThreadService", () => {
  let ctx: ServerContext;
  let deleted: string[];
  let threads: ThreadService;

  beforeEach(() => {
    const storage = createMemoryStorage();
    ctx = {
      config: loadConfig(["dev", "--config", fixtureConfig], {}),
      storage,
      graphs: echoGraphRegistry(storage),
      logger: createLogger("thread-service", "silent"),
    };
    deleted = [];
    threads = new ThreadService(ctx, {
      onDelete: async (threadId) => {
        deleted.push(threadId);
      },
    });
  });

  /** Runs the echo graph on the thread, so it has checkpoints and values. */
  const ran = async (thread: Thread) => {
    const graph = await ctx.graphs.get("agent");
    await graph.invoke({ topic: "tea" }, { configurable: { thread_id: thread.thread_id } });
  };
  const checkpoints = async (threadId: string) => {
    let count = 0;
    for await (const _ of ctx.storage.checkpointer.list({ configurable: { thread_id: threadId } })) count++;
    return count;
  };

  it("answers 404 for an unknown thread on every lookup", async () => {
    const unknown = crypto.randomUUID();
    const detail = `Thread with ID ${unknown} not found`;
    await expect(threads.get(unknown)).rejects.toMatchObject({ status: 404, detail });
    await expect(threads.patch(unknown, { metadata: { a: 1 } })).rejects.toMatchObject({ status: 404, detail });
    await expect(threads.delete(unknown)).rejects.toMatchObject({ status: 404, detail });
    await expect(threads.copy(unknown)).rejects.toMatchObject({ status: 404 });
    await expect(threads.state(unknown, {}, false)).rejects.toMatchObject({ status: 404 });
    await expect(threads.checkpoints(unknown, { limit: 10 })).rejects.toMatchObject({ status: 404 });
    await expect(threads.historyJson(unknown, { limit: 10 })).rejects.toMatchObject({ status: 404 });
    expect(await threads.find(unknown)).toBeUndefined();
    expect(deleted).toEqual([]);
  });

  it("returns the existing thread for if_exists do_nothing and answers 409 otherwise", async () => {
    const created = await threads.create({ metadata: { user: "u1" } });
    const again = await threads.create({
      thread_id: created.thread_id,
      metadata: { user: "u2" },
      if_exists: "do_nothing",
    });
    expect(again).toEqual(created);
    await expect(threads.create({ thread_id: created.thread_id })).rejects.toMatchObject({ status: 409 });
  });

  it("removes a thread again when its supersteps cannot be applied, runs included", async () => {
    const threadId = crypto.randomUUID();
    await expect(
      threads.create({
        thread_id: threadId,
        metadata: { graph_id: "agent" },
        supersteps: [{ updates: [{ values: { topic: "x" }, as_node: "no_such_node" }] }],
      }),
    ).rejects.toMatchObject({ status: 400 });
    expect(await threads.find(threadId)).toBeUndefined();
    expect(deleted).toEqual([threadId]);
  });

  it("deletes a thread with its checkpoints and tells the runs", async () => {
    const thread = await threads.create({ metadata: { graph_id: "agent" } });
    await ran(thread);
    expect(await checkpoints(thread.thread_id)).toBeGreaterThan(0);
    await threads.delete(thread.thread_id);
    expect(await threads.find(thread.thread_id)).toBeUndefined();
    expect(await checkpoints(thread.thread_id)).toBe(0);
    expect(deleted).toEqual([thread.thread_id]);
  });

  it("leaves a thread written since it was read when removing conditionally", async () => {
    const thread = await threads.create({ metadata: { graph_id: "agent" } });
    await ran(thread);
    await threads.patch(thread.thread_id, { metadata: { touched: true } });
    expect(await threads.remove(thread.thread_id, thread)).toBe(false);
    expect(await threads.find(thread.thread_id)).toBeDefined();
    expect(await checkpoints(thread.thread_id)).toBeGreaterThan(0);
    expect(deleted).toEqual([]);
  });

  it("prunes: counts only existing threads, deletes with the runs hook or keeps the latest checkpoint", async () => {
    const [kept, gone] = [await threads.create({}), await threads.create({})];
    for (const thread of [kept, gone]) {
      await ctx.storage.threads.update(thread.thread_id, { metadata: { graph_id: "agent" } });
      await ran(thread);
      await ran(thread);
    }
    const unknown = crypto.randomUUID();
    expect(await threads.prune([kept.thread_id, kept.thread_id, unknown], "keep_latest")).toBe(1);
    expect(await checkpoints(kept.thread_id)).toBe(1);
    expect(await threads.prune([gone.thread_id, unknown], "delete")).toBe(1);
    expect(deleted).toEqual([gone.thread_id]);
  });

  it("deletes the threads matching metadata as a DELETE does: checkpoints and runs too", async () => {
    const mine = [
      await threads.create({ metadata: { owner: "a", graph_id: "agent" } }),
      await threads.create({ metadata: { owner: "a" } }),
    ];
    await ran(mine[0] as Thread);
    const other = await threads.create({ metadata: { owner: "b" } });
    await threads.deleteWhere({ owner: "a" });
    for (const thread of mine) expect(await threads.find(thread.thread_id)).toBeUndefined();
    expect(await checkpoints(mine[0]?.thread_id as string)).toBe(0);
    expect(await threads.find(other.thread_id)).toBeDefined();
    expect(deleted.sort()).toEqual(mine.map((thread) => thread.thread_id).sort());
  });

  it("answers 409 to copy and prune while a thread is busy, and does nothing", async () => {
    const busy = await threads.create({ metadata: { graph_id: "agent" } });
    const idle = await threads.create({ metadata: { graph_id: "agent" } });
    await ran(busy);
    await ran(busy);
    await ctx.storage.threads.update(busy.thread_id, { status: "busy" });
    await expect(threads.copy(busy.thread_id)).rejects.toMatchObject({ status: 409 });
    for (const strategy of ["delete", "keep_latest"] as const) {
      await expect(threads.prune([idle.thread_id, busy.thread_id], strategy)).rejects.toMatchObject({ status: 409 });
    }
    expect(await threads.find(idle.thread_id)).toBeDefined();
    expect(await checkpoints(busy.thread_id)).toBeGreaterThan(1);
    expect((await threads.search({ limit: 10, offset: 0, sort_by: "created_at", sort_order: "asc" })).total).toBe(2);
  });

  it("copies metadata, state and checkpoints to a new id", async () => {
    const source = await threads.create({ metadata: { graph_id: "agent", user: "copier" } });
    await ran(source);
    await threads.updateState(source.thread_id, { values: { topic: "copied" }, as_node: "respond" });
    const copy = await threads.copy(source.thread_id);
    expect(copy.thread_id).not.toBe(source.thread_id);
    expect(copy.metadata).toEqual({ graph_id: "agent", user: "copier", thread_id: copy.thread_id });
    expect(copy.values).toEqual({ topic: "copied", reply: "about tea" });
    expect(await checkpoints(copy.thread_id)).toBe(await checkpoints(source.thread_id));
  });

  it("refuses state updates on a busy thread (409) and on one without a graph (400)", async () => {
    const busy = await threads.create({ metadata: { graph_id: "agent" } });
    await ctx.storage.threads.update(busy.thread_id, { status: "busy" });
    await expect(threads.updateState(busy.thread_id, { values: { topic: "x" } })).rejects.toMatchObject({
      status: 409,
    });
    const bare = await threads.create({});
    await expect(threads.updateState(bare.thread_id, { values: { topic: "x" } })).rejects.toMatchObject({
      status: 400,
      detail: `Thread ${bare.thread_id} has no graph ID`,
    });
  });

  it("writes state updates as checkpoints the thread's values and history follow", async () => {
    const thread = await threads.create({ metadata: { graph_id: "agent" } });
    await ran(thread);
    const checkpoint = await threads.updateState(thread.thread_id, { values: { reply: "edited" }, as_node: "respond" });
    expect(checkpoint?.thread_id).toBe(thread.thread_id);
    expect((await threads.get(thread.thread_id)).values).toEqual({ topic: "tea", reply: "edited" });
    const history = await threads.checkpoints(thread.thread_id, { limit: 2 });
    expect(history.map((state) => state.checkpoint_id)).toEqual([checkpoint?.checkpoint_id, expect.any(String)]);
    const earlier = JSON.parse(
      jsonText(await threads.historyJson(thread.thread_id, { limit: 1, before: checkpoint?.checkpoint_id })),
    ) as ThreadState[];
    expect(earlier[0]?.values).toEqual({ topic: "tea", reply: "about tea" });
    const before = await threads.state(thread.thread_id, { checkpoint_id: earlier[0]?.checkpoint_id ?? "" }, false);
    expect(before.values).toEqual({ topic: "tea", reply: "about tea" });
  });
});
