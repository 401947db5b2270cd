import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { Annotation, END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import { RedisCheckpointer } from "../checkpoint/redis.ts";
import type { RedisClient } from "../storage/redis-client.ts";
import type { JsonObject, Thread } from "../storage/types.ts";
import type { CheckpointValuesRef } from "../stream/references.ts";
import { CheckpointValues } from "../stream/references.ts";
import { threadKeys } from "./redis-index.ts";
import { RedisThreadStore } from "./redis-store.ts";
import { toJsonValue } from "./state.ts";

const paging = { limit: 10, offset: 0, sort_by: "created_at", sort_order: "desc" } as const;

const State = Annotation.Root({ ...MessagesAnnotation.spec, topic: Annotation<string> });

/** A chat turn saved by the real checkpointer: its final values as JSON and the reference a run's worker makes of them. */
async function savedTurn(checkpointer: RedisCheckpointer, threadId: string, topic: string) {
  const graph = new StateGraph(State)
    .addNode("answer", (state) => ({ messages: [new AIMessage({ content: `on ${state.topic}`, id: `a-${topic}` })] }))
    .addEdge(START, "answer")
    .addEdge("answer", END)
    .compile({ checkpointer });
  const config = { configurable: { thread_id: threadId } };
  const input = { topic, messages: [new HumanMessage({ content: topic, id: `h-${topic}` })] };
  let streamed: Record<string, unknown> = {};
  for await (const chunk of await graph.stream(input, { ...config, streamMode: "values" })) streamed = chunk;
  const state = await graph.getState(config);
  const values_at: CheckpointValuesRef = {
    thread_id: threadId,
    checkpoint_ns: "",
    checkpoint_id: String(state.config.configurable?.checkpoint_id),
    keys: Object.keys(streamed),
    inline: { topic },
  };
  return { values: toJsonValue(streamed) as JsonObject, values_at };
}

describe("redis thread records without values", () => {
  let client: RedisClient;
  let prefix: string;
  let checkpointer: RedisCheckpointer;
  let store: RedisThreadStore;
  /** Another replica: the same Redis, nothing remembered. */
  const replica = () =>
    new RedisThreadStore(client, prefix, new CheckpointValues(new RedisCheckpointer(client, { prefix })));
  const stored = async (threadId: string) =>
    JSON.parse((await client.get(threadKeys(prefix).record(threadId))) as string) as JsonObject;

  beforeAll(async () => {
    client = (await connectTestRedis()) as RedisClient;
    prefix = uniquePrefix("thread-record");
    checkpointer = new RedisCheckpointer(client, { prefix });
    store = new RedisThreadStore(client, prefix, new CheckpointValues(checkpointer));
  });
  afterAll(() => client.close());

  it("keeps a run's values in its checkpoint: the record refers to it, every replica reads them", async () => {
    const thread = await store.create({ metadata: { owner: "a" } });
    const turn = await savedTurn(checkpointer, thread.thread_id, "tides");
    const written = await store.update(thread.thread_id, { ...turn, status: "idle", state_updated: true }, thread);
    expect(written?.values).toEqual(turn.values);

    const record = await stored(thread.thread_id);
    expect(record).not.toHaveProperty("values");
    expect(record.values_at).toEqual(turn.values_at);
    expect(JSON.stringify(record)).not.toContain("on tides");

    const other = replica();
    expect((await other.get(thread.thread_id))?.values).toEqual(turn.values);
    const page = await other.search({ ...paging, values: { topic: "tides" }, metadata: { owner: "a" } });
    expect(page.items.map((item) => [item.thread_id, item.values])).toEqual([[thread.thread_id, turn.values]]);
    expect(await other.count({ values: { topic: "moons" } })).toBe(0);
    // A filter on a list reads it from the checkpoint; one on other values, from the reference.
    expect(await replica().count({ values: { messages: turn.values.messages as JsonObject } })).toBe(1);
    expect(await replica().count({ values: { messages: [] } })).toBe(0);
    expect(await replica().count({ values: { absent: null } })).toBe(0);
    const byId = await replica().search({ ...paging, ids: [thread.thread_id] });
    expect(byId.items.map((item) => item.values)).toEqual([turn.values]);

    // Read as text and parsed when first looked at: a thread read alike, spread, serialised or given new values.
    const lazy = (await replica().get(thread.thread_id)) as Thread;
    expect(JSON.parse(JSON.stringify(lazy))).toEqual({ ...written, values: turn.values });
    expect({ ...((await replica().get(thread.thread_id)) as Thread) }.values).toEqual(turn.values);
    const replaced = (await replica().get(thread.thread_id)) as Thread;
    replaced.values = { other: 1 };
    expect(replaced.values).toEqual({ other: 1 });
  });

  it("reads records written with values inline (the earlier layout) and moves them to a reference", async () => {
    const thread = await store.create({});
    const earlier = { ...thread, values: { topic: "old", messages: [{ type: "human", content: "old" }] } };
    await client.set(threadKeys(prefix).record(thread.thread_id), JSON.stringify(earlier));

    const read = await replica().get(thread.thread_id);
    expect(read).toEqual(earlier);
    const renamed = await store.update(thread.thread_id, { metadata: { name: "kept" } }, read);
    expect(renamed?.values).toEqual(earlier.values);
    expect((await stored(thread.thread_id)).values).toEqual(earlier.values);

    const turn = await savedTurn(checkpointer, thread.thread_id, "new");
    await store.update(thread.thread_id, { ...turn, state_updated: true });
    const record = await stored(thread.thread_id);
    expect(record).not.toHaveProperty("values");
    expect((await replica().get(thread.thread_id))?.values).toEqual(turn.values);
  });

  it("puts values written without a checkpoint reference (state updates, rollbacks) back inline", async () => {
    const thread = await store.create({});
    await store.update(thread.thread_id, { ...(await savedTurn(checkpointer, thread.thread_id, "x")) });
    const values = { topic: "set by hand", messages: [] };
    await store.update(thread.thread_id, { values, state_updated: true });
    const record = await stored(thread.thread_id);
    expect(record.values).toEqual(values);
    expect(record).not.toHaveProperty("values_at");
    expect((await replica().get(thread.thread_id))?.values).toEqual(values);
  });

  it("loses no concurrent update: each compare-and-set that lost retries on the record it lost to", async () => {
    const thread = await store.create({});
    const turn = await savedTurn(checkpointer, thread.thread_id, "race");
    const stale = await store.update(thread.thread_id, { ...turn });
    const writers = Array.from({ length: 12 }, (_, i) => [store, replica()][i % 2] as RedisThreadStore);
    await Promise.all(
      writers.map((writer, i) => writer.update(thread.thread_id, { metadata: { [`k${i}`]: i } }, stale)),
    );
    const final = await replica().get(thread.thread_id);
    expect(final?.metadata).toEqual(Object.fromEntries(writers.map((_, i) => [`k${i}`, i])));
    expect(final?.values).toEqual(turn.values);
    expect((await stored(thread.thread_id)).values_at).toEqual(turn.values_at);
    // The script compares the digest of the record the writer expects: a stale one is refused.
    expect(await store.updateIfUnchanged(stale as Thread, { metadata: { late: true } })).toBeUndefined();
    expect(await store.deleteIfUnchanged(stale as Thread)).toBe(false);
    const current = (await store.get(thread.thread_id)) as Thread;
    expect(await store.updateIfUnchanged(current, { metadata: { late: true } })).toBeDefined();
  });
});
