import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { Annotation, MessagesAnnotation, START, StateGraph, type StateSnapshot } from "@langchain/langgraph";
import type { RedisClientType } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import { RedisCheckpointer } from "../checkpoint/redis.ts";
import type { RedisClient } from "../storage/redis-client.ts";
import { CheckpointValues, jsonText } from "../stream/references.ts";
import { toThreadState } from "./state.ts";
import { threadStateJson, threadStatesJson } from "./state-json.ts";

/** A chat that also keeps a scalar, a short list and a key it never writes, saved by the real Redis checkpointer. */
const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  turns: Annotation<number>({ reducer: (_, next) => next, default: () => 0 }),
  tags: Annotation<string[]>({ reducer: (_, next) => next, default: () => [] }),
  unset: Annotation<string | undefined>(),
});

function chatGraph(checkpointer: RedisCheckpointer) {
  return new StateGraph(State)
    .addNode("answer", (state) => ({
      messages: [new AIMessage({ content: `answer ${state.messages.length} — “quoted” ✓`, tool_calls: [] })],
      turns: state.turns + 1,
      tags: ["chat", `turn-${state.turns + 1}`],
    }))
    .addEdge(START, "answer")
    .compile({ checkpointer });
}

describe("thread states as JSON in pieces", () => {
  let redis: RedisClientType;
  let checkpointer: RedisCheckpointer;
  let checkpointValues: CheckpointValues;

  beforeAll(async () => {
    redis = await connectTestRedis();
    checkpointer = new RedisCheckpointer(redis as unknown as RedisClient, { prefix: uniquePrefix("state-json") });
    checkpointValues = new CheckpointValues(checkpointer);
  });
  afterAll(() => redis.quit());

  /** A thread of `turns` runs (two messages each), and its graph and config. */
  async function conversation(threadId: string, turns: number) {
    const graph = chatGraph(checkpointer);
    const config = { configurable: { thread_id: threadId } };
    for (let i = 0; i < turns; i++) {
      await graph.invoke({ messages: [new HumanMessage({ content: `question ${i}`, id: `h${i}` })] }, config);
    }
    return { graph, config };
  }

  const expected = (snapshot: StateSnapshot) => JSON.stringify(toThreadState(snapshot));

  it("is what the state converted whole is, with a long conversation's messages from their stored texts", async () => {
    const { graph, config } = await conversation("long", 8);
    const snapshot = await graph.getState(config);
    const messages = snapshot.values.messages as unknown[];
    expect(messages).toHaveLength(16);
    // Every message is one the checkpointer put and handed out unchanged: the list comes from their texts.
    expect(checkpointer.rememberedItemTexts(messages)).toHaveLength(16);
    expect(jsonText(await threadStateJson(snapshot, checkpointValues))).toBe(expected(snapshot));
  });

  it("converts a list whose message was edited in place as it now is", async () => {
    const { graph, config } = await conversation("edited", 6);
    const snapshot = await graph.getState(config);
    const messages = snapshot.values.messages as AIMessage[];
    (messages[3] as AIMessage).content = "edited after the read";
    expect(checkpointer.rememberedItemTexts(messages)).toBeUndefined();
    const json = jsonText(await threadStateJson(snapshot, checkpointValues));
    expect(json).toBe(expected(snapshot));
    expect(json).toContain("edited after the read");
  });

  it("is the history's states converted whole, older states' lists as views of the latest's", async () => {
    const { graph, config } = await conversation("history", 7);
    await graph.getState(config);
    const snapshots: StateSnapshot[] = [];
    for await (const snapshot of graph.getStateHistory(config, { limit: 10 })) snapshots.push(snapshot);
    expect(snapshots).toHaveLength(10);
    expect(jsonText(await threadStatesJson(snapshots, checkpointValues))).toBe(
      JSON.stringify(snapshots.map((snapshot) => toThreadState(snapshot))),
    );
    expect(jsonText(await threadStatesJson([], checkpointValues))).toBe("[]");
  });

  it("is the empty state for a thread with no graph, and values of no plain object as a whole", async () => {
    expect(JSON.parse(jsonText(await threadStateJson(undefined, checkpointValues)))).toMatchObject({
      values: {},
      next: [],
      checkpoint: null,
    });
    const { graph, config } = await conversation("odd", 1);
    const snapshot = await graph.getState(config);
    for (const values of [{}, [1, 2], null, { when: new Date(0), skipped: () => 1, kept: 1 }]) {
      const odd = { ...snapshot, values } as StateSnapshot;
      expect(jsonText(await threadStateJson(odd, checkpointValues))).toBe(expected(odd));
    }
  });
});
