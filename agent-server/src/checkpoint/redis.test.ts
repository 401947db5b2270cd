import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import type { RedisClientType } from "redis";
import { v4 as uuidv4 } from "uuid";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import { RedisCheckpointer } from "./redis.ts";
import { channelOfBlobField, scopeOf } from "./redis-layout.ts";
import { blobListOf } from "./redis-record.ts";

const State = Annotation.Root({
  items: Annotation<string[]>({ reducer: (left, right) => left.concat(right), default: () => [] }),
  untouched: Annotation<string>,
});

describe("RedisCheckpointer storage layout", () => {
  let client: RedisClientType;
  let checkpointer: RedisCheckpointer;
  let graph: ReturnType<typeof buildGraph>;
  const buildGraph = (saver: RedisCheckpointer) =>
    new StateGraph(State)
      .addNode("step", () => ({ items: ["step"] }))
      .addEdge(START, "step")
      .addEdge("step", END)
      .compile({ checkpointer: saver });
  const run = (threadId: string, item: string) =>
    graph.invoke({ items: [item], untouched: "same" }, { configurable: { thread_id: threadId } });
  /** Keys starting with `prefix` (escaped: scopes contain glob characters such as `[`). */
  const keysOf = async (prefix: string) => {
    const found: string[] = [];
    const pattern = `${prefix.replace(/[*?[\]\\]/g, "\\$&")}*`;
    for await (const keys of client.scanIterator({ MATCH: pattern })) found.push(...keys);
    return found;
  };

  beforeAll(async () => {
    client = await connectTestRedis();
  });
  afterAll(() => client.quit());
  beforeEach(() => {
    checkpointer = new RedisCheckpointer(client, { prefix: uniquePrefix("cpl") });
    graph = buildGraph(checkpointer);
  });

  it("stores a channel value once per version, not once per checkpoint", async () => {
    const thread = uuidv4();
    await run(thread, "a");
    await run(thread, "b");
    const untouchedBlobs = (await client.hKeys(checkpointer.keys.blobs(scopeOf(thread, "")))).filter((field) =>
      field.startsWith("untouched\n"),
    );
    // Written by both inputs (same value, new version each time), read by all 6 checkpoints.
    expect(untouchedBlobs).toHaveLength(2);
  });

  it("deleteThread leaves no key of that thread behind (its change counter expires) and keeps the others", async () => {
    const [doomed, kept] = [uuidv4(), uuidv4()];
    await run(doomed, "a");
    await run(kept, "a");
    await checkpointer.deleteThread(doomed);
    const remaining = await keysOf(checkpointer.keys.base);
    expect(remaining.filter((key) => key.includes(doomed))).toEqual([checkpointer.keys.changes(doomed)]);
    expect(await client.ttl(checkpointer.keys.changes(doomed))).toBeGreaterThan(0);
    expect(remaining.filter((key) => key.includes(kept)).length).toBeGreaterThan(0);
    expect(await client.sMembers(checkpointer.keys.threads())).toEqual([kept]);
  });

  it("pruneThread drops old checkpoint records, writes and unreferenced channel versions", async () => {
    const thread = uuidv4();
    await run(thread, "a");
    await run(thread, "b");
    await checkpointer.pruneThread(thread);
    const scope = scopeOf(thread, "");
    expect(await keysOf(checkpointer.keys.checkpointPrefix(scope))).toHaveLength(1);
    const [latest] = await client.zRange(checkpointer.keys.ids(scope), 0, -1);
    const needed = blobListOf(await checkpointer.redis.get(checkpointer.keys.checkpoint(scope, latest ?? ""))).split(
      "\0",
    );
    // Versions of channels left empty (`__start__` after the input) have no frame to keep.
    const values = (await checkpointer.getTuple({ configurable: { thread_id: thread } }))?.checkpoint.channel_values;
    const notEmpty = needed.filter((field) => channelOfBlobField(field) in (values ?? {}));
    expect(notEmpty.map(channelOfBlobField).sort()).toEqual(["items", "untouched"]);
    expect((await client.hKeys(checkpointer.keys.blobs(scope))).sort()).toEqual(notEmpty.sort());
    const withWrites = await client.hKeys(checkpointer.keys.packedWrites(scope));
    expect(withWrites.every((id) => id === latest)).toBe(true);
  });
});
