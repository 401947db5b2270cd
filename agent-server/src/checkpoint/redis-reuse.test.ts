import { AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  type BaseCheckpointSaver,
  END,
  MemorySaver,
  MessagesAnnotation,
  START,
  StateGraph,
} from "@langchain/langgraph";
import { v4 as uuidv4 } from "uuid";
import { describe, expect, it } from "vitest";
import { scopeOf } from "./redis-layout.ts";
import { redisSavers } from "./testing/redis-savers.ts";

const config = (threadId: string): RunnableConfig => ({ configurable: { thread_id: threadId } });
/** Long enough that the conversation's versions are remembered (values of 1 KiB and more). */
const ask = (i: number) => ({ messages: [new HumanMessage({ id: `h${i}`, content: `question ${i} `.repeat(20) })] });

/** `edit`: what the node does to the conversation in place before answering. */
function chatGraph(checkpointer: BaseCheckpointSaver, edit: (messages: BaseMessage[]) => void = () => {}) {
  const answers: AIMessage[] = [];
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("reply", (state) => {
      edit(state.messages);
      const answer = new AIMessage({ id: `ai-${state.messages.length}`, content: `answer ${state.messages.length}` });
      answers.push(answer);
      return { messages: [answer] };
    })
    .addEdge(START, "reply")
    .addEdge("reply", END)
    .compile({ checkpointer });
  return { graph, answers };
}

const messagesOf = async (saver: BaseCheckpointSaver, threadId: string) =>
  (await saver.getTuple(config(threadId)))?.checkpoint.channel_values.messages as BaseMessage[];

/** Every state of the thread, newest first, as JSON. */
async function historyOf(saver: BaseCheckpointSaver, threadId: string): Promise<string[]> {
  const states: string[] = [];
  for await (const state of chatGraph(saver).graph.getStateHistory(config(threadId))) {
    states.push(JSON.stringify({ values: state.values, next: state.next }));
  }
  return states;
}

describe("RedisCheckpointer re-using what it stored", () => {
  const suite = redisSavers("cpr");
  const { saver } = suite;

  it("starts the next run from messages loaded once, in a list of its own, never the graph's objects", async () => {
    const threadId = uuidv4();
    const writer = saver();
    const { graph, answers } = chatGraph(writer);
    for (let i = 0; i < 6; i++) await graph.invoke(ask(i), config(threadId));
    const first = await messagesOf(writer, threadId);
    const second = await messagesOf(writer, threadId);
    expect(first).toHaveLength(12);
    expect(first.at(-1)).not.toBe(answers.at(-1));
    expect(first.at(-1)).toBeInstanceOf(AIMessage);
    expect(second.every((message, i) => message === first[i])).toBe(true);
    expect(second).not.toBe(first);
    // What another process reads from Redis.
    expect(JSON.stringify(await messagesOf(saver(), threadId))).toBe(JSON.stringify(first));
  });

  it("reads what was stored when a message it handed out was changed in place since", async () => {
    const threadId = uuidv4();
    const writer = saver();
    const { graph } = chatGraph(writer);
    for (let i = 0; i < 6; i++) await graph.invoke(ask(i), config(threadId));
    const stored = JSON.stringify(await messagesOf(saver(), threadId));
    const handedOut = await messagesOf(writer, threadId);
    (handedOut[0] as HumanMessage).content = "changed";
    expect(JSON.stringify(await messagesOf(writer, threadId))).toBe(stored);
    const again = await messagesOf(writer, threadId);
    (again[1] as AIMessage).additional_kwargs.note = { deep: ["changed"] };
    again.push(new HumanMessage("pushed"));
    expect(JSON.stringify(await messagesOf(writer, threadId))).toBe(stored);
  });

  it("hands a conversation out unchecked once after its graph returned, then checks it again", async () => {
    const threadId = uuidv4();
    const writer = saver();
    const { graph } = chatGraph(writer);
    for (let i = 0; i < 6; i++) await graph.invoke(ask(i), config(threadId));
    const stored = JSON.stringify(await messagesOf(saver(), threadId));
    const checked = await messagesOf(writer, threadId);
    await graph.invoke(ask(6), config(threadId));
    writer.graphReturned(threadId);
    // The same objects as the last put checked, without comparing them again.
    const unchecked = await messagesOf(writer, threadId);
    expect(unchecked.slice(0, 12).every((message, i) => message === checked[i])).toBe(true);
    // Once handed out they may be edited: the next read checks them.
    (unchecked[0] as HumanMessage).content = "changed";
    const again = await messagesOf(writer, threadId);
    expect(JSON.stringify(again.slice(0, 12))).toBe(stored);
    expect(again[0]).not.toBe(unchecked[0]);
  });

  it("hands out, after a run on a conversation it read, the messages it read and those the run added", async () => {
    const threadId = uuidv4();
    // Written by other processes: this one knows the conversation from reading it.
    for (let i = 0; i < 5; i++) await chatGraph(saver()).graph.invoke(ask(i), config(threadId));
    const reader = saver();
    const read = await messagesOf(reader, threadId);
    await chatGraph(reader).graph.invoke(ask(5), config(threadId));
    reader.graphReturned(threadId);
    const handedOut = await messagesOf(reader, threadId);
    expect(handedOut).toHaveLength(12);
    expect(handedOut.slice(0, 10).every((message, i) => message === read[i])).toBe(true);
    expect(JSON.stringify(handedOut)).toBe(JSON.stringify(await messagesOf(saver(), threadId)));
  });

  it("checks the conversation again after an older checkpoint's read handed out its messages", async () => {
    const threadId = uuidv4();
    const writer = saver();
    const { graph } = chatGraph(writer);
    for (let i = 0; i < 6; i++) await graph.invoke(ask(i), config(threadId));
    const olderId = await nthId(writer, threadId, 3);
    await graph.invoke(ask(6), config(threadId));
    writer.graphReturned(threadId);
    // An older state's messages are the held ones it starts with: whoever reads it may edit them.
    const older = await messagesAt(writer, threadId, olderId);
    (older[0] as HumanMessage).content = "edited by a reader of the history";
    const latest = await messagesOf(writer, threadId);
    expect(JSON.stringify(latest)).toBe(JSON.stringify(await messagesOf(saver(), threadId)));
    expect(latest[0]).not.toBe(older[0]);
  });

  it("checks the conversation when a step edited it in place after the last put that stored it", async () => {
    const threadId = uuidv4();
    const writer = saver();
    // `reply` stores the conversation; `tidy` then edits it in place and writes nothing.
    let edits = 0;
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("reply", (state) => ({
        messages: [new AIMessage({ id: `ai-${state.messages.length}`, content: "ok" })],
      }))
      .addNode("tidy", (state) => {
        (state.messages[0] as HumanMessage).content = `edit ${++edits}`;
        return {};
      })
      .addEdge(START, "reply")
      .addEdge("reply", "tidy")
      .addEdge("tidy", END)
      .compile({ checkpointer: writer });
    for (let i = 0; i < 6; i++) {
      // Each put done before the next step runs (by default a put races the next node's edit).
      await graph.invoke(ask(i), { ...config(threadId), durability: "sync" });
      writer.graphReturned(threadId);
    }
    // No put stored an edit (each came after the conversation's last put of its run), and the
    // edited objects are not handed out: the next run started from what was stored.
    const read = JSON.stringify(await messagesOf(writer, threadId));
    expect(read).toBe(JSON.stringify(await messagesOf(saver(), threadId)));
    expect(edits).toBe(6);
    expect(read).not.toContain('"edit ');
  });

  it("keeps the history MemorySaver keeps when a graph edits earlier messages in place", async () => {
    const threadId = uuidv4();
    // Each checkpoint stored before the next step runs: by default a put races the next node's edit.
    const synced = { ...config(threadId), durability: "sync" as const };
    const edit = (messages: BaseMessage[]) => {
      const earlier = messages[messages.length - 3];
      if (earlier) earlier.content = `${String(earlier.content).slice(0, 40)} (edited)`;
    };
    const histories = [];
    for (const checkpointer of [new MemorySaver(), saver()]) {
      const { graph } = chatGraph(checkpointer, edit);
      for (let i = 0; i < 8; i++) await graph.invoke(ask(i), synced);
      histories.push(await historyOf(checkpointer, threadId));
    }
    expect(histories[1]).toEqual(histories[0]);
    expect(await historyOf(saver(), threadId)).toEqual(histories[0]);
  });

  it("hands out no object that differs from what loading it gives (a field its text does not keep)", async () => {
    const threadId = uuidv4();
    const writer = saver();
    const { graph, answers } = chatGraph(writer);
    for (let i = 0; i < 5; i++) await graph.invoke(ask(i), config(threadId));
    const named = answers.at(-1) as AIMessage;
    // Set after construction: not in the constructor's arguments, which is what a message stores.
    named.name = "bot";
    await graph.invoke(ask(5), config(threadId));
    const fresh = await messagesOf(saver(), threadId);
    expect(fresh[9]?.name).toBeUndefined();
    const read = await messagesOf(writer, threadId);
    expect(read[9]).not.toBe(named);
    expect(read.map((message) => message.name)).toEqual(fresh.map((message) => message.name));
    // The same when the node sets it before the message is first stored.
    const naming = new StateGraph(MessagesAnnotation)
      .addNode("reply", (state) => {
        const answer = new AIMessage({ id: `named-${state.messages.length}`, content: "named" });
        answer.name = "bot";
        return { messages: [answer] };
      })
      .addEdge(START, "reply")
      .compile({ checkpointer: writer });
    await naming.invoke(ask(6), config(threadId));
    const [mine, theirs] = [await messagesOf(writer, threadId), await messagesOf(saver(), threadId)];
    expect(mine.at(-1)?.name).toBeUndefined();
    expect(mine.map((message) => message.name)).toEqual(theirs.map((message) => message.name));
  });

  it("reads the checkpoint another process wrote since, not the one it remembers", async () => {
    const threadId = uuidv4();
    const [one, other] = [saver(), saver()];
    for (let i = 0; i < 5; i++) await chatGraph(one).graph.invoke(ask(i), config(threadId));
    const held = await messagesOf(one, threadId);
    expect(held).toHaveLength(10);
    await chatGraph(other).graph.invoke(ask(5), config(threadId));
    const read = await messagesOf(one, threadId);
    expect(read).toHaveLength(12);
    expect(JSON.stringify(read)).toBe(JSON.stringify(await messagesOf(other, threadId)));
    // The ten messages it held are not loaded again.
    expect(read.slice(0, 10).every((message, i) => message === held[i])).toBe(true);
  });

  /** Five runs by one process (`runner`), and another (`reader`) that has read nothing yet. */
  async function runByAnother() {
    const threadId = uuidv4();
    const [runner, reader] = [saver(), saver()];
    const latestAt = async () => (await runner.getTuple(config(threadId)))?.checkpoint.id as string;
    for (let i = 0; i < 5; i++) await chatGraph(runner).graph.invoke(ask(i), config(threadId));
    return { threadId, runner, reader, latestAt };
  }

  it("keeps what it read of another process's runs, by id too, and loads only what they added since", async () => {
    const { threadId, runner, reader, latestAt } = await runByAnother();
    // The reader answers each run by the id of its last checkpoint, as a replica answering `…/wait` does.
    const first = await messagesAt(reader, threadId, await latestAt());
    const ref = { thread_id: threadId, checkpoint_ns: "", checkpoint_id: await latestAt() };
    const texts = reader.storedItemTexts(ref, "messages");
    expect(texts?.map(String)).toEqual(first.map((message) => JSON.stringify(message)));
    expect(reader.rememberedItemTexts(first)).toEqual(texts);
    await chatGraph(runner).graph.invoke(ask(5), config(threadId));
    const next = await messagesAt(reader, threadId, await latestAt());
    expect(next).toHaveLength(12);
    expect(next.slice(0, 10).every((message, i) => message === first[i])).toBe(true);
    expect(JSON.stringify(next)).toBe(JSON.stringify(await messagesOf(saver(), threadId)));
    // An older checkpoint read by id is not kept in place of the later one.
    await messagesAt(reader, threadId, await nthId(runner, threadId, 3));
    const again = await messagesAt(reader, threadId, await latestAt());
    expect(again.every((message, i) => message === next[i])).toBe(true);
  });

  it("reads a later version as deltas on the one it holds, without the chain's full copy", async () => {
    const { threadId, runner, reader, latestAt } = await runByAnother();
    const held = await messagesAt(reader, threadId, await latestAt());
    await chatGraph(runner).graph.invoke(ask(5), config(threadId));
    // Every full copy of the conversation gone: only deltas remain, down to the version held.
    const blobs = runner.keys.blobs(scopeOf(threadId, ""));
    const frames = await suite.client.hGetAll(blobs);
    const fullCopies = Object.keys(frames).filter(
      (field) => field.startsWith("messages\n") && !frames[field]?.split("\n")[0]?.includes('"base"'),
    );
    expect(fullCopies.length).toBeGreaterThan(0);
    await suite.client.hDel(blobs, fullCopies);
    const next = await messagesAt(reader, threadId, await latestAt());
    expect(next).toHaveLength(12);
    expect(next.slice(0, 10).every((message, i) => message === held[i])).toBe(true);
    expect(next.map((message) => message.id)).toEqual(
      (await messagesOf(runner, threadId)).map((message) => message.id),
    );
    // A process that holds nothing walks to the full copy, which is gone.
    expect(await messagesAt(saver(), threadId, await latestAt())).toBeUndefined();
  });

  it("reads older checkpoints down to the full copy it keeps, not to Redis's", async () => {
    const threadId = uuidv4();
    const writer = saver();
    const { graph } = chatGraph(writer);
    // Large enough to be stored deflated: its full copy is the one worth keeping.
    const long = new HumanMessage({ id: "long", content: "a long question ".repeat(1500) });
    await graph.invoke({ messages: [long] }, config(threadId));
    for (let i = 0; i < 4; i++) await graph.invoke(ask(i), config(threadId));
    const reader = saver();
    const history = await historyOf(reader, threadId);
    expect(history.length).toBeGreaterThan(10);
    // Every full copy of the conversation in Redis made unreadable: the chains end at them.
    const blobs = writer.keys.blobs(scopeOf(threadId, ""));
    const frames = await suite.client.hGetAll(blobs);
    const fullCopies = Object.keys(frames).filter(
      (field) => field.startsWith("messages\n") && !frames[field]?.split("\n")[0]?.includes('"base"'),
    );
    expect(fullCopies.length).toBeGreaterThan(0);
    await suite.client.hSet(blobs, Object.fromEntries(fullCopies.map((field) => [field, "not a frame"])));
    expect(await historyOf(reader, threadId)).toEqual(history);
    // The writer kept the one its deltas were written on.
    expect(await historyOf(writer, threadId)).toEqual(history);
    // A process that keeps none reads Redis's.
    await expect(historyOf(saver(), threadId)).rejects.toThrow();
  });

  it("loads older checkpoints' messages as the held ones they start with, unless those were edited", async () => {
    const threadId = uuidv4();
    const writer = saver();
    const { graph } = chatGraph(writer);
    for (let i = 0; i < 8; i++) await graph.invoke(ask(i), config(threadId));
    expect(await historyOf(writer, threadId)).toEqual(await historyOf(saver(), threadId));
    const latest = await messagesOf(writer, threadId);
    const olderId = await nthId(writer, threadId, 3);
    const older = await messagesAt(writer, threadId, olderId);
    expect(older.length).toBeGreaterThan(11);
    expect(older.length).toBeLessThan(latest.length);
    expect(older.every((message, i) => message === latest[i])).toBe(true);
    // A held message edited in place: the older checkpoint reads what was stored from there on.
    (latest[10] as HumanMessage).content = "changed";
    const afterEdit = await messagesAt(writer, threadId, olderId);
    expect(JSON.stringify(afterEdit)).toBe(JSON.stringify(await messagesAt(saver(), threadId, olderId)));
    expect(afterEdit[9]).toBe(latest[9]);
    expect(afterEdit[10]).not.toBe(latest[10]);
  });

  it("loads an older checkpoint whose message was since replaced by id with one of the same length", async () => {
    const threadId = uuidv4();
    const writer = saver();
    for (let i = 0; i < 6; i++) await chatGraph(writer).graph.invoke(ask(i), config(threadId));
    const before = await nthId(writer, threadId, 0);
    const replacing = new StateGraph(MessagesAnnotation)
      .addNode("reply", (state) => {
        const first = state.messages[1] as AIMessage;
        return {
          messages: [new AIMessage({ id: first.id, content: String(first.content).replace("answer", "ANSWER") })],
        };
      })
      .addEdge(START, "reply")
      .compile({ checkpointer: writer });
    await replacing.invoke({ messages: [] }, config(threadId));
    expect(String((await messagesOf(writer, threadId))[1]?.content)).toContain("ANSWER");
    const older = await messagesAt(writer, threadId, before);
    expect(String(older[1]?.content)).toContain("answer");
    expect(JSON.stringify(older)).toBe(JSON.stringify(await messagesAt(saver(), threadId, before)));
  });
});

const messagesAt = async (saver: BaseCheckpointSaver, threadId: string, checkpointId: string) =>
  (await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_id: checkpointId } }))?.checkpoint
    .channel_values.messages as BaseMessage[];

/** The id of the thread's `n`th newest checkpoint. */
async function nthId(saver: BaseCheckpointSaver, threadId: string, n: number): Promise<string> {
  let i = 0;
  for await (const tuple of saver.list(config(threadId))) if (i++ === n) return tuple.checkpoint.id;
  throw new Error(`fewer than ${n + 1} checkpoints`);
}
