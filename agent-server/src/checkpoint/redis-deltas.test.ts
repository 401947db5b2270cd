import { AIMessage, HumanMessage, RemoveMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  Annotation,
  type BaseCheckpointSaver,
  Command,
  END,
  interrupt,
  MemorySaver,
  MessagesAnnotation,
  START,
  StateGraph,
} from "@langchain/langgraph";
import { type Checkpoint, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { v4 as uuidv4 } from "uuid";
import { describe, expect, it } from "vitest";
import { blobField, encodeFrame, scopeOf } from "./redis-layout.ts";
import { redisSavers } from "./testing/redis-savers.ts";

/** `reply` answers with a message whose id counts the conversation, so two savers see the same ids. */
function chatGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(MessagesAnnotation)
    .addNode("reply", (state) => ({
      messages: [new AIMessage({ id: `ai-${state.messages.length}`, content: `answer to ${state.messages.length}` })],
    }))
    .addEdge(START, "reply")
    .addEdge("reply", END)
    .compile({ checkpointer });
}

const config = (threadId: string, checkpointId?: string): RunnableConfig => ({
  configurable: { thread_id: threadId, ...(checkpointId && { checkpoint_id: checkpointId }) },
});
/** The first question is long, so later versions are small next to the value and stored as deltas. */
const ask = (i: number) => ({
  messages: [new HumanMessage({ id: `h${i}`, content: i === 0 ? "long ".repeat(2000) : `question ${i} `.repeat(10) })],
});

/** Every state of the thread, newest first, as JSON: what history shows. */
async function historyOf(graph: ReturnType<typeof chatGraph>, threadId: string): Promise<string[]> {
  const states: string[] = [];
  for await (const state of graph.getStateHistory(config(threadId))) {
    states.push(JSON.stringify({ values: state.values, next: state.next, source: state.metadata?.source }));
  }
  return states;
}

/**
 * A conversation with removals, replacements by id and a fork from an old checkpoint; returns
 * its history. Checkpoint ids differ between savers, so the fork point is picked by position.
 */
async function conversation(saver: BaseCheckpointSaver, threadId: string): Promise<string[]> {
  const graph = chatGraph(saver);
  for (let i = 0; i < 8; i++) await graph.invoke(ask(i), config(threadId));
  await graph.updateState(config(threadId), { messages: [new RemoveMessage({ id: "h3" })] }, "reply");
  await graph.updateState(config(threadId), { messages: [new AIMessage({ id: "ai-1", content: "edited" })] }, "reply");
  await graph.invoke(ask(8), config(threadId));
  const history = [];
  for await (const state of graph.getStateHistory(config(threadId))) history.push(state);
  const old = history[history.length - 7]?.config.configurable?.checkpoint_id as string;
  await graph.invoke(ask(100), config(threadId, old));
  await graph.invoke(ask(9), config(threadId));
  return historyOf(graph, threadId);
}

describe("RedisCheckpointer channel deltas", () => {
  const suite = redisSavers("cpd");
  const { saver } = suite;
  /** The stored frames of one channel, by field. */
  const framesOf = async (threadId: string, channel: string, namespace = "") => {
    const blobs = await suite.client.hGetAll(saver().keys.blobs(scopeOf(threadId, namespace)));
    return Object.entries(blobs).filter(([field]) => field.startsWith(`${channel}\n`));
  };
  const isDelta = ([, frame]: [string, string]) => frame.slice(0, frame.indexOf("\n")).includes('"base"');

  it("rebuilds removals, replacements by id and forks exactly as MemorySaver keeps them", async () => {
    const threadId = uuidv4();
    const expected = await conversation(new MemorySaver(), threadId);
    expect(await conversation(saver(), threadId)).toEqual(expected);
    // A process that never wrote the thread reads the same history.
    expect(await historyOf(chatGraph(saver()), threadId)).toEqual(expected);
    const frames = await framesOf(threadId, "messages");
    expect(frames.filter(isDelta).length).toBeGreaterThan(frames.length / 2);
  });

  it("stores an appended message as a delta whose size does not grow with the conversation", async () => {
    const threadId = uuidv4();
    const graph = chatGraph(saver());
    for (let i = 0; i < 40; i++) await graph.invoke(ask(i), config(threadId));
    const frames = await framesOf(threadId, "messages");
    const deltaSizes = frames.filter(isDelta).map(([, frame]) => frame.length);
    const fullSizes = frames.filter((frame) => !isDelta(frame)).map(([, frame]) => frame.length);
    // The first version (and any chain restart) is a full copy; everything else is one message.
    expect(fullSizes.length).toBeLessThanOrEqual(3);
    expect(Math.max(...deltaSizes)).toBeLessThan(600);
    expect((await graph.getState(config(threadId))).values.messages).toHaveLength(80);
  });

  it("keeps subgraph namespaces readable: interrupted inner state, resume, history", async () => {
    const Inner = Annotation.Root({ ...MessagesAnnotation.spec, note: Annotation<string> });
    const build = (checkpointer: BaseCheckpointSaver) => {
      const inner = new StateGraph(Inner)
        .addNode("talk", (state) => ({
          messages: [new AIMessage({ id: `inner-${state.messages.length}`, content: "inner" })],
        }))
        .addNode("ask", () => ({ note: interrupt("note?") as string }))
        .addNode("again", (state) => ({
          messages: [new AIMessage({ id: `again-${state.messages.length}`, content: state.note })],
        }))
        .addEdge(START, "talk")
        .addEdge("talk", "ask")
        .addEdge("ask", "again")
        .addEdge("again", END)
        .compile();
      return new StateGraph(Inner)
        .addNode("inner", inner)
        .addEdge(START, "inner")
        .addEdge("inner", END)
        .compile({ checkpointer });
    };
    const play = async (checkpointer: BaseCheckpointSaver, threadId: string) => {
      const graph = build(checkpointer);
      const seen: unknown[] = [];
      for (let turn = 0; turn < 3; turn++) {
        await graph.invoke(ask(turn), config(threadId));
        const state = await graph.getState(config(threadId), { subgraphs: true });
        seen.push(
          state.values,
          state.tasks.map((task) => (task.state as { values?: unknown } | undefined)?.values),
        );
        await graph.invoke(new Command({ resume: `note ${turn}` }), config(threadId));
        seen.push((await graph.getState(config(threadId))).values);
      }
      return JSON.stringify(seen);
    };
    const threadId = uuidv4();
    const redis = saver();
    expect(await play(redis, threadId)).toEqual(await play(new MemorySaver(), threadId));
    const namespaces = await suite.client.sMembers(redis.keys.scopesOf(threadId));
    expect(namespaces.length).toBeGreaterThan(1);
  });

  it("writes a full copy when the version it would build on was removed by another process", async () => {
    const threadId = uuidv4();
    const writer = saver();
    const items = Array.from({ length: 50 }, (_, i) => `item ${i} `.repeat(5));
    const put = async (parentId: string | undefined, version: string, values: string[], runId: string) => {
      const checkpoint: Checkpoint = {
        ...emptyCheckpoint(),
        id: uuid6(-1),
        channel_values: { items: values },
        channel_versions: { items: version },
      };
      const metadata = { source: "loop" as const, step: 0, parents: {}, run_id: runId };
      await writer.put(config(threadId, parentId), checkpoint, metadata, { items: version });
      return checkpoint.id;
    };
    const first = await put(undefined, "1.5", items, "run-1");
    await put(first, "2.5", [...items, "two"], "run-2");
    // Another replica rolls back run-2, whose version this process would build the next one on.
    await saver().deleteRun(threadId, "run-2");
    await put(first, "3.5", [...items, "three"], "run-3");
    expect((await saver().getTuple(config(threadId)))?.checkpoint.channel_values).toEqual({
      items: [...items, "three"],
    });
    expect((await framesOf(threadId, "items")).filter(isDelta)).toEqual([]);
  });

  it("prune and rollback keep the versions that kept deltas are built on", async () => {
    const threadId = uuidv4();
    const graph = chatGraph(saver());
    const run = (i: number, runId: string, checkpointId?: string) =>
      graph.invoke(ask(i), { ...config(threadId, checkpointId), metadata: { run_id: runId } });
    for (let i = 0; i < 4; i++) await run(i, `run-${i}`);
    const history = [];
    for await (const state of graph.getStateHistory(config(threadId))) history.push(state);
    // A fork from after run-1: its versions are deltas on run-3's, the latest this process knows.
    const afterRun1 = history.find((state) => state.values.messages?.length === 4 && state.next.length === 0);
    await run(10, "fork", afterRun1?.config.configurable?.checkpoint_id as string);
    await saver().deleteRun(threadId, "run-3");
    await saver().deleteRun(threadId, "run-2");
    const before = (await chatGraph(saver()).getState(config(threadId))).values;
    expect(before.messages.map((message: { id: string }) => message.id)).toEqual([
      "h0",
      "ai-1",
      "h1",
      "ai-3",
      "h10",
      "ai-5",
    ]);
    await saver().pruneThread(threadId);
    expect((await chatGraph(saver()).getState(config(threadId))).values).toEqual(before);
    expect((await framesOf(threadId, "messages")).some(isDelta)).toBe(true);
  });

  it("reads threads written before deltas and builds deltas on them", async () => {
    const threadId = uuidv4();
    const scope = scopeOf(threadId, "");
    const keys = saver().keys;
    const items = Array.from({ length: 50 }, (_, i) => `item ${i} `.repeat(5));
    // The previous layout, as it was written: every channel version a full `{type}` frame.
    const legacy: Checkpoint = { ...emptyCheckpoint(), id: uuid6(-1) };
    legacy.channel_versions = { items: "1.25" };
    const [type, bytes] = await saver().serde.dumpsTyped(legacy);
    const [metadataType, metadata] = await saver().serde.dumpsTyped({ source: "loop", step: 0, parents: {} });
    await suite.client
      .multi()
      .hSet(
        keys.blobs(scope),
        blobField("items", "1.25"),
        encodeFrame({ type: "json" }, Buffer.from(JSON.stringify(items))),
      )
      .hSet(keys.checkpoint(scope, legacy.id), {
        checkpoint: Buffer.from(bytes),
        type,
        metadata: Buffer.from(metadata),
        metadata_type: metadataType,
        blobs: blobField("items", "1.25"),
      })
      .zAdd(keys.ids(scope), { score: 0, value: legacy.id })
      .sAdd(keys.scopesOf(threadId), scope)
      .sAdd(keys.threads(), threadId)
      .exec();

    const writer = saver();
    const read = await writer.getTuple(config(threadId));
    expect(read?.checkpoint.channel_values).toEqual({ items });
    const next: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(-1),
      channel_values: { items: [...items, "new"] },
      channel_versions: { items: "2.5" },
    };
    await writer.put(config(threadId, legacy.id), next, { source: "loop", step: 1, parents: {} }, { items: "2.5" });
    const frames = await framesOf(threadId, "items");
    expect(frames.filter(isDelta).map(([field]) => field)).toEqual([blobField("items", "2.5")]);
    expect((await saver().getTuple(config(threadId)))?.checkpoint.channel_values).toEqual({ items: [...items, "new"] });
  });
});
