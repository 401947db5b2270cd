import { AIMessage, HumanMessage, RemoveMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { RedisCheckpointer } from "../checkpoint/redis.ts";
import { createMemoryRunBackend } from "../runs/queue/memory-backend.ts";
import type { RedisClient } from "../storage/redis-client.ts";
import { toJsonValue } from "../threads/state.ts";
import { END_EVENT, RedisRunEventLog } from "./event-log.ts";
import { readRunEvents } from "./reader.ts";
import { CheckpointValues, type CheckpointValuesRef, MaterialisingRunEventLog } from "./references.ts";

/** A two-step chat whose answer carries a tool call, saved by the real Redis checkpointer. */
function chatGraph(checkpointer: RedisCheckpointer) {
  return new StateGraph(MessagesAnnotation)
    .addNode("answer", () => ({
      messages: [
        new AIMessage({ content: "looking", id: "a1", tool_calls: [{ id: "c1", name: "search", args: { q: "x" } }] }),
      ],
    }))
    .addEdge(START, "answer")
    .addEdge("answer", END)
    .compile({ checkpointer });
}

describe("run event logs that reference checkpoints", () => {
  let redis: RedisClientType;
  let subscriber: RedisClientType;
  let checkpointer: RedisCheckpointer;
  let prefix: string;
  let raw: RedisRunEventLog;

  beforeAll(async () => {
    redis = await connectTestRedis();
    subscriber = createClient({ url: testRedisUrl() });
    await subscriber.connect();
    prefix = uniquePrefix("refs");
    checkpointer = new RedisCheckpointer(redis as unknown as RedisClient, { prefix });
    raw = new RedisRunEventLog(redis as unknown as RedisClient, subscriber as unknown as RedisClient, prefix);
  });
  afterAll(async () => {
    await subscriber.quit();
    await redis.quit();
  });

  /** A thread with one saved run, and the latest checkpoint's id and values as the graph streamed them. */
  async function savedRun(threadId: string) {
    const graph = chatGraph(checkpointer);
    let streamed: Record<string, unknown> = {};
    const config = { configurable: { thread_id: threadId } };
    const input = { messages: [new HumanMessage({ content: "find x", id: "h1" })] };
    for await (const chunk of await graph.stream(input, { ...config, streamMode: "values" })) streamed = chunk;
    const state = await graph.getState(config);
    const ref: CheckpointValuesRef = {
      thread_id: threadId,
      checkpoint_ns: "",
      checkpoint_id: String(state.config.configurable?.checkpoint_id),
      keys: Object.keys(streamed),
      inline: {},
    };
    return { ref, json: JSON.stringify(toJsonValue(streamed)), values: streamed };
  }

  it("reads a log written before references exactly as it was written", async () => {
    const runId = "old-layout";
    const key = `${prefix}ev:${runId}`;
    const closing = JSON.stringify({ status: "success", values: { messages: [{ type: "human", content: "hi" }] } });
    for (const [event, data] of [
      ["metadata", '{"run_id":"old-layout","attempt":1}'],
      ["values", '{"messages":[]}'],
      [END_EVENT, closing],
    ]) {
      await redis.xAdd(key, "0-*", { event: event as string, data: data as string });
    }
    const log = new MaterialisingRunEventLog(raw, new CheckpointValues(checkpointer));
    expect(await log.range(runId, -1, 10)).toEqual([
      { id: 0, event: "metadata", data: '{"run_id":"old-layout","attempt":1}' },
      { id: 1, event: "values", data: '{"messages":[]}' },
      { id: 2, event: END_EVENT, data: closing },
    ]);
    expect(await log.last(runId)).toEqual({ id: 2, event: END_EVENT, data: closing });
  });

  it("stores a reference instead of the state and reads it back as the event's JSON, in any process", async () => {
    const { ref, json, values } = await savedRun("t-refs");
    const writer = new MaterialisingRunEventLog(raw, new CheckpointValues(checkpointer));
    await writer.append("r1", [
      { event: "metadata", data: "{}" },
      { event: "values", data: "", ref: JSON.stringify(ref) },
    ]);
    await writer.append("r1", [{ event: END_EVENT, data: JSON.stringify({ status: "success", values_at: ref }) }]);
    const stored = (await redis.xRange(`${prefix}ev:r1`, "-", "+")) ?? [];
    expect(stored[1]?.message).toEqual({ event: "values", ref: JSON.stringify(ref) });

    // Another process: nothing remembered, read from the checkpoint.
    const elsewhere = new MaterialisingRunEventLog(raw, new CheckpointValues(checkpointer));
    const read = await elsewhere.range("r1", -1, 10);
    expect(read[1]).toEqual({ id: 1, event: "values", data: json, ref: JSON.stringify(ref) });
    expect(JSON.parse(read[2]?.data ?? "")).toEqual({ status: "success", values: JSON.parse(json) });
    // Where the values start, so `…/wait` answers them without parsing them.
    expect(read[2]?.data.slice(read[2]?.valuesAt, -1)).toBe(json);
    expect(JSON.parse(json).messages[1].tool_calls[0]).toMatchObject({ id: "c1", name: "search" });

    // This process: the values its run streamed, the same JSON.
    const here = new CheckpointValues(checkpointer);
    here.remember(ref, values);
    expect(await here.json(ref)).toBe(json);
  });

  it("reads null for an event and a closing entry's values whose checkpoint is gone", async () => {
    const { ref } = await savedRun("t-gone");
    await checkpointer.deleteThread("t-gone");
    const log = new MaterialisingRunEventLog(raw, new CheckpointValues(checkpointer));
    await log.append("r-gone", [
      { event: "values", data: "", ref: JSON.stringify(ref) },
      { event: END_EVENT, data: JSON.stringify({ status: "success", values_at: ref }) },
    ]);
    expect(await log.range("r-gone", -1, 10)).toEqual([
      { id: 0, event: "values", data: "null", ref: JSON.stringify(ref) },
      { id: 1, event: END_EVENT, data: '{"status":"success","values":null}', valuesAt: 29 },
    ]);
  });

  it("counts references in a page's byte budget, in Redis and in memory, so a page holds a few states", async () => {
    const { ref } = await savedRun("t-page");
    const many = Array.from({ length: 10 }, () => ({ event: "values", data: "", ref: JSON.stringify(ref) }));
    const memory = createMemoryRunBackend();
    for (const inner of [raw, memory.events]) {
      const log = new MaterialisingRunEventLog(inner, new CheckpointValues(checkpointer));
      await log.append("r-page", many);
      expect((await log.range("r-page", -1, 500, 1 << 18)).length).toBe(4);
      expect((await log.range("r-page", 3, 500, 1 << 18)).map((event) => event.id)).toEqual([4, 5, 6, 7]);
    }
    await memory.close();
  });

  it("streams a finished log of many references to its end without waiting for a heartbeat", async () => {
    const { ref, json } = await savedRun("t-read");
    const log = new MaterialisingRunEventLog(raw, new CheckpointValues(checkpointer));
    const many = Array.from({ length: 10 }, () => ({ event: "values", data: "", ref: JSON.stringify(ref) }));
    await log.append("r-read", [...many, { event: END_EVENT, data: '{"status":"success","values":null}' }]);
    const began = performance.now();
    const read: string[] = [];
    const options = {
      afterId: -1,
      signal: new AbortController().signal,
      heartbeatMs: 60_000,
      isOver: async () => true,
    };
    for await (const item of readRunEvents(log, "r-read", options)) {
      if (!("heartbeat" in item)) read.push(item.event === END_EVENT ? END_EVENT : item.data);
    }
    expect(read).toEqual([...many.map(() => json), END_EVENT]);
    expect(performance.now() - began).toBeLessThan(10_000);
  });

  it("makes a long conversation's JSON from its stored texts, equal to converting its state", async () => {
    const threadId = "t-stored-texts";
    const graph = chatGraph(checkpointer);
    const config = { configurable: { thread_id: threadId } };
    const turn = async (messages: (HumanMessage | RemoveMessage)[]) => {
      let streamed: Record<string, unknown> = {};
      for await (const chunk of await graph.stream({ messages }, { ...config, streamMode: "values" })) streamed = chunk;
      const id = String((await graph.getState(config)).config.configurable?.checkpoint_id);
      const ref = { thread_id: threadId, checkpoint_ns: "", checkpoint_id: id, keys: ["messages"], inline: {} };
      return { ref, expected: JSON.stringify(toJsonValue(streamed)) };
    };
    const said = (i: number) =>
      new HumanMessage({ content: `question ${i}: ${"more words ".repeat(20)}`, id: `q${i}` });
    const values = new CheckpointValues(checkpointer);
    const elsewhere = new CheckpointValues(new RedisCheckpointer(redis as unknown as RedisClient, { prefix }));
    for (const messages of [
      Array.from({ length: 12 }, (_, i) => said(i)),
      [said(12)],
      // A replacement by id and a removal: the list changes in its middle.
      [new HumanMessage({ content: "asked again", id: "q3" }), new RemoveMessage({ id: "q5" })],
    ]) {
      const { ref, expected } = await turn(messages);
      expect(checkpointer.storedItemTexts(ref, "messages")?.length).toBe(JSON.parse(expected).messages.length);
      expect(await values.json(ref)).toBe(expected);
      // Read again (the thread's record after the run), and by a process that holds none of it.
      expect(await values.json(ref)).toBe(expected);
      expect(await elsewhere.json(ref)).toBe(expected);
    }
  });
});
