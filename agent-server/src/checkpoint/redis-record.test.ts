import { AIMessage, HumanMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { type Checkpoint, type CheckpointMetadata, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import type { RedisClientType } from "redis";
import { v4 as uuidv4 } from "uuid";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import { RedisCheckpointer } from "./redis.ts";
import { scopeOf } from "./redis-layout.ts";
import { unpackEntries } from "./redis-pack.ts";
import { decodeRecord, packRecord } from "./redis-record.ts";
import { FastJsonPlusSerializer } from "./serde.ts";

const serde = new FastJsonPlusSerializer();

function chatGraph(checkpointer: RedisCheckpointer) {
  return new StateGraph(MessagesAnnotation)
    .addNode("reply", (state) => ({ messages: [new AIMessage(`answer ${state.messages.length}`)] }))
    .addEdge(START, "reply")
    .addEdge("reply", END)
    .compile({ checkpointer });
}

const runConfig = (threadId: string, runId: string): RunnableConfig => ({
  configurable: { thread_id: threadId },
  metadata: { run_id: runId, graph_id: "chat" },
});

describe("packed checkpoint records", () => {
  it("read back what was packed: string versions, another thread's id in metadata, no parent", async () => {
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(0),
      channel_versions: { messages: "00002.abc", topic: "00001.x" },
      versions_seen: { node: { messages: "00001.y" } },
    };
    const metadata = { source: "loop", step: 3, parents: {}, thread_id: "another" } as CheckpointMetadata;
    const packed = await packRecord(serde, "mine", checkpoint, metadata, undefined);
    const record = await decodeRecord(serde, "mine", checkpoint.id, packed);
    expect(record?.checkpoint).toEqual({ ...checkpoint, channel_values: {} });
    expect(record?.metadata).toEqual(metadata);
    expect(record?.parentId).toBeUndefined();
    expect(record?.blobList).toBe("messages\n00002.abc\0topic\n00001.x");
  });

  it("leaves out the id, numeric versions and the thread's own id", async () => {
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(0),
      channel_versions: { messages: 4.123456789, __start__: 3.5 },
      versions_seen: { __input__: {}, reply: { "branch:to:reply": 3.5 } },
    };
    const message = new AIMessage({ content: "the answer to the question", id: uuidv4() });
    const metadata = {
      ...{ run_id: uuidv4(), thread_id: "t-1", source: "loop", step: 2, parents: {} },
      writes: { reply: { messages: [message] } },
    } as CheckpointMetadata;
    const parent = uuid6(0);
    const packed = await packRecord(serde, "t-1", checkpoint, metadata, parent);
    const [, checkpointBytes] = await serde.dumpsTyped(checkpoint);
    const [, metadataBytes] = await serde.dumpsTyped(metadata);
    expect(packed.length).toBeLessThan(checkpointBytes.length + metadataBytes.length);
    expect(packed.includes(checkpoint.id)).toBe(false);
    expect(packed.includes('"t-1"')).toBe(false);
    const record = await decodeRecord(serde, "t-1", checkpoint.id, packed);
    expect(record?.checkpoint).toEqual(checkpoint);
    expect(JSON.stringify(record?.metadata)).toBe(JSON.stringify(metadata));
    expect(record?.parentId).toBe(parent);
    // A copy of the thread reads its own id without the record being rewritten.
    const copied = (await decodeRecord(serde, "t-2", checkpoint.id, packed))?.metadata as { thread_id?: string };
    expect(copied.thread_id).toBe("t-2");
  });
});

describe("checkpoint records written in the hash layout", () => {
  let client: RedisClientType;
  let saver: RedisCheckpointer;

  beforeAll(async () => {
    client = await connectTestRedis();
    saver = new RedisCheckpointer(client, { prefix: uniquePrefix() });
  });
  afterAll(() => client.quit());

  /** Rewrites every record of the thread as the hash layout stored it, pending writes in a key per checkpoint. */
  async function toHashLayout(threadId: string): Promise<void> {
    const scope = scopeOf(threadId, "");
    for (const id of await client.zRange(saver.keys.ids(scope), 0, -1)) {
      const packed = await saver.redis.hGet(saver.keys.packedWrites(scope), id);
      for (const [field, frame] of packed ? unpackEntries(packed) : []) {
        await saver.redis.hSet(saver.keys.writes(scope, id), field, frame);
        await client.sAdd(saver.keys.writeIds(scope), id);
      }
      const key = saver.keys.checkpoint(scope, id);
      const record = await decodeRecord(serde, threadId, id, await saver.redis.get(key));
      if (!record) throw new Error(`no record ${id}`);
      const { channel_values: _, ...withoutValues } = record.checkpoint;
      const [type, checkpointBytes] = await serde.dumpsTyped(withoutValues);
      const [metadataType, metadataBytes] = await serde.dumpsTyped(record.metadata);
      await client.del(key);
      await saver.redis.hSet(key, {
        ...{ checkpoint: Buffer.from(checkpointBytes), type, metadata: Buffer.from(metadataBytes) },
        ...{ metadata_type: metadataType, blobs: record.blobList, ...(record.parentId && { parent: record.parentId }) },
      });
    }
  }

  async function history(threadId: string): Promise<unknown[]> {
    const tuples = [];
    for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) tuples.push(tuple);
    return tuples;
  }

  it("reads, lists, copies, rolls back and prunes them as before, next to packed ones", async () => {
    const [threadId, copyId] = [uuidv4(), uuidv4()];
    const graph = chatGraph(saver);
    for (const i of [1, 2]) await graph.invoke({ messages: [new HumanMessage(`q${i}`)] }, runConfig(threadId, `r${i}`));
    const packed = await history(threadId);
    await toHashLayout(threadId);
    const [first] = await client.zRange(saver.keys.ids(scopeOf(threadId, "")), 0, 0);
    expect(await client.type(saver.keys.checkpoint(scopeOf(threadId, ""), first ?? ""))).toBe("hash");
    await client.del(saver.keys.packedWrites(scopeOf(threadId, "")));
    expect(await client.sCard(saver.keys.writeIds(scopeOf(threadId, "")))).toBeGreaterThan(0);
    expect(await history(threadId)).toEqual(packed);

    // A run on top: packed records after hash ones, one conversation.
    await graph.invoke({ messages: [new HumanMessage("q3")] }, runConfig(threadId, "r3"));
    const state = await graph.getState({ configurable: { thread_id: threadId } });
    expect(state.values.messages.map((message: AIMessage) => message.content)).toEqual([
      ...["q1", "answer 1", "q2", "answer 3", "q3", "answer 5"],
    ]);

    await saver.copyThread(threadId, copyId);
    const copied = (await history(copyId)) as { metadata: { thread_id?: string } }[];
    expect(copied).toHaveLength(packed.length + 3);
    expect(copied.every((tuple) => tuple.metadata.thread_id === copyId)).toBe(true);

    await saver.deleteRun(threadId, "r3");
    expect(await history(threadId)).toEqual(packed);
    await saver.pruneThread(threadId);
    const [latest] = await history(threadId);
    expect(await history(threadId)).toEqual([latest]);
    expect(latest).toEqual(packed[0]);
  });
});
