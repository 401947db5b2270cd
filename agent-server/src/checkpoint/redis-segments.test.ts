import { AIMessage, HumanMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import type { RedisClientType } from "redis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import { RedisCheckpointer } from "./redis.ts";
import { scopeOf } from "./redis-layout.ts";

const config = (threadId: string, checkpointId?: string): RunnableConfig => ({
  configurable: { thread_id: threadId, ...(checkpointId && { checkpoint_id: checkpointId }) },
});

function chatGraph(checkpointer: RedisCheckpointer) {
  return new StateGraph(MessagesAnnotation)
    .addNode("reply", (state) => ({
      messages: [
        new AIMessage({ id: `ai-${state.messages.length}`, content: `answer ${state.messages.length} `.repeat(8) }),
      ],
    }))
    .addEdge(START, "reply")
    .addEdge("reply", END)
    .compile({ checkpointer });
}

const ask = (i: number) => ({ messages: [new HumanMessage({ id: `h${i}`, content: `question ${i} `.repeat(12) })] });

/** Every checkpoint of the thread as the saver lists it, newest first, as JSON. */
async function everything(saver: RedisCheckpointer, threadId: string, options = {}): Promise<string[]> {
  const tuples: string[] = [];
  for await (const tuple of saver.list(config(threadId), options)) tuples.push(JSON.stringify(tuple));
  return tuples;
}

describe("RedisCheckpointer cold segments", () => {
  let client: RedisClientType;
  let prefix: string;
  /** 2 runs (3 checkpoints each) stay hot; 4 runs go in a segment. */
  const saver = () => new RedisCheckpointer(client, { prefix, cold: { hot: 6, segment: 12 } });
  const memoryOf = async () => {
    let total = 0;
    for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) {
      for (const key of keys) total += (await client.memoryUsage(key, { SAMPLES: 0 })) ?? 0;
    }
    return total;
  };
  const segmentsOf = (threadId: string) => client.hLen(`${prefix}cp:seg:${scopeOf(threadId, "")}`);

  beforeAll(async () => {
    client = await connectTestRedis();
  });
  afterAll(() => client.quit());
  beforeEach(() => {
    prefix = uniquePrefix("cps");
  });

  /** A conversation of `runs` runs, every checkpoint still in its keys (packing never started). */
  async function conversation(runs: number): Promise<{ threadId: string; before: string[] }> {
    const unpacked = new RedisCheckpointer(client, { prefix, cold: { hot: 6, segment: Number.MAX_SAFE_INTEGER } });
    const threadId = crypto.randomUUID();
    const graph = chatGraph(unpacked);
    for (let i = 0; i < runs; i++) await graph.invoke(ask(i), config(threadId));
    return { threadId, before: await everything(unpacked, threadId) };
  }

  it("reads, lists and pages every packed checkpoint as it was, from this process and a fresh one", async () => {
    const { threadId, before } = await conversation(20);
    const memoryBefore = await memoryOf();
    const packer = saver();
    expect(await packer.cold.pack(threadId, scopeOf(threadId, ""))).toBe(true);
    expect(await segmentsOf(threadId)).toBe(1);
    expect(await client.zCard(`${prefix}cp:ids:${scopeOf(threadId, "")}`)).toBe(6);
    for (const reader of [packer, saver()]) {
      expect(await everything(reader, threadId)).toEqual(before);
      const ids = before.map((tuple) => JSON.parse(tuple).config.configurable.checkpoint_id as string);
      const old = ids[40] as string;
      expect(JSON.stringify(await reader.getTuple(config(threadId, old)))).toBe(before[40]);
      expect(await everything(reader, threadId, { before: config(threadId, ids[10]), limit: 35 })).toEqual(
        before.slice(11, 46),
      );
      expect(await everything(reader, threadId, { filter: { step: 1 } })).toEqual(
        before.filter((tuple) => JSON.parse(tuple).metadata.step === 1),
      );
    }
    expect(await memoryOf()).toBeLessThan(memoryBefore / 2);
  });

  it("packs in the background once a scope holds enough checkpoints, and keeps conversing", async () => {
    const checkpointer = saver();
    const graph = chatGraph(checkpointer);
    const threadId = crypto.randomUUID();
    for (let i = 0; i < 30; i++) await graph.invoke(ask(i), config(threadId));
    await expect.poll(() => segmentsOf(threadId)).toBeGreaterThanOrEqual(4);
    const state = await graph.getState(config(threadId));
    expect(state.values.messages).toHaveLength(60);
    expect(state.values.messages[0].content).toBe(ask(0).messages[0]?.content);
    const history = [];
    for await (const snapshot of graph.getStateHistory(config(threadId))) history.push(snapshot);
    expect(history).toHaveLength(90);
    expect(history.map((snapshot) => snapshot.values.messages?.length ?? 0)).toEqual(
      Array.from({ length: 90 }, (_, i) => 60 - 2 * Math.floor(i / 3) - (i % 3 === 2 ? 2 : i % 3 === 1 ? 1 : 0)),
    );
  });

  it("resumes from a packed checkpoint: the fork reads it, and its pending writes stay with it", async () => {
    const { threadId, before } = await conversation(10);
    const checkpointer = saver();
    await checkpointer.cold.pack(threadId, scopeOf(threadId, ""));
    const old = JSON.parse(before[20] as string).config.configurable.checkpoint_id as string;
    await checkpointer.putWrites(config(threadId, old), [["messages", "late write"]], "task-late");
    const tuple = await checkpointer.getTuple(config(threadId, old));
    expect(tuple?.pendingWrites?.map(([task, channel, value]) => [task, channel, value])).toContainEqual([
      "task-late",
      "messages",
      "late write",
    ]);
    const graph = chatGraph(checkpointer);
    const forked = await graph.invoke(ask(99), config(threadId, old));
    const { messages } = JSON.parse(before[20] as string).checkpoint.channel_values;
    expect(forked.messages.length).toBe(messages.length + 2);
  });

  it("never loses a checkpoint when packing races forks from the checkpoints it moves", async () => {
    const { threadId, before } = await conversation(12);
    const ids = before.map((tuple) => JSON.parse(tuple).config.configurable.checkpoint_id as string);
    const checkpointer = saver();
    const graph = chatGraph(checkpointer);
    const forks = await Promise.all([
      checkpointer.cold.pack(threadId, scopeOf(threadId, "")),
      ...[30, 33, 34].map((at, i) => graph.invoke(ask(100 + i), config(threadId, ids[at]))),
    ]);
    for (const tuple of before) {
      const { checkpoint_id } = JSON.parse(tuple).config.configurable;
      expect(JSON.stringify(await saver().getTuple(config(threadId, checkpoint_id)))).toBe(tuple);
    }
    for (const fork of forks.slice(1) as { messages: unknown[] }[]) {
      const latest = (await saver().getTuple(config(threadId))) as { checkpoint: { id: string } };
      expect(latest.checkpoint.id).toBeDefined();
      expect(fork.messages.length).toBeGreaterThan(0);
    }
    const all = await everything(saver(), threadId);
    expect(all.length).toBe(before.length + 9);
    for (const tuple of all)
      expect(JSON.parse(tuple).checkpoint.channel_values.messages?.length ?? 0).toBeGreaterThanOrEqual(0);
  });

  it("leaves a scope with pending writes stored in the earlier layout as it is", async () => {
    const { threadId, before } = await conversation(8);
    const scope = scopeOf(threadId, "");
    await client.sAdd(`${prefix}cp:wids:${scope}`, "an-earlier-checkpoint");
    expect(await saver().cold.pack(threadId, scope)).toBe(false);
    expect(await segmentsOf(threadId)).toBe(0);
    expect(await everything(saver(), threadId)).toEqual(before);
  });

  it("deleting a thread removes its segments", async () => {
    const { threadId } = await conversation(8);
    const checkpointer = saver();
    await checkpointer.cold.pack(threadId, scopeOf(threadId, ""));
    expect(await segmentsOf(threadId)).toBe(1);
    await checkpointer.deleteThread(threadId);
    const left = [];
    for await (const keys of client.scanIterator({ MATCH: `${prefix}cp:*`, COUNT: 1000 })) left.push(...keys);
    expect(left.filter((key) => !key.includes(":v:"))).toEqual([]);
  });
});
