import { randomUUID } from "node:crypto";
import type { Client } from "@langchain/langgraph-sdk";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl } from "../../../testing/redis.ts";
import { DEFAULT_COLD_LIMITS } from "../checkpoint/redis-segments.ts";
import { DEFAULT_ARCHIVE_LIMITS } from "./queue/redis-archive.ts";
import { type RunTestServer, startRunServer } from "./testing/server.ts";

/**
 * A conversation long enough that its old checkpoints move into cold segments
 * (checkpoint/redis-segments.ts) and its old runs into archives (queue/redis-archive.ts), read
 * through the API: history, state at a checkpoint, copy, runs listed, read, cancelled and
 * deleted, as they were before the move.
 */

const ask = (i: number) => ({ messages: [{ role: "human", content: `question ${i}` }] });
/** The example agent writes 3 checkpoints a run: enough runs that packing starts, and fewer. */
const PACKED_RUNS = Math.ceil((DEFAULT_COLD_LIMITS.hot + DEFAULT_COLD_LIMITS.segment) / 3) + 2;

async function history(client: Client, threadId: string, options: { before?: string } = {}) {
  const states = await client.threads.getHistory(threadId, {
    limit: 1000,
    ...(options.before && { before: { configurable: { checkpoint_id: options.before } } }),
  });
  return states.map((state) => JSON.stringify(state));
}

describe("a conversation whose old checkpoints and runs moved, through the API", () => {
  let server: RunTestServer;
  const prefix = `cold-${randomUUID().slice(0, 8)}:`;
  const redis = createClient({ url: testRedisUrl() });

  beforeAll(async () => {
    await redis.connect();
    server = await startRunServer(testRedisUrl(), { prefix, workers: 2 });
  });
  afterAll(async () => {
    await server?.close();
    await redis.quit();
  });

  const segmentKeys = async (threadId: string) => {
    const keys: string[] = [];
    for await (const page of redis.scanIterator({ MATCH: `${prefix}cp:seg:*${threadId}*` })) keys.push(...page);
    return keys;
  };

  it("serves history, old states and copies as they were before their checkpoints moved", async () => {
    const { client } = server;
    const { thread_id: threadId } = await client.threads.create();
    const before = PACKED_RUNS - 6;
    for (let i = 0; i < before; i++) await client.runs.wait(threadId, "agent", { input: ask(i) });
    const early = await history(client, threadId);
    expect(await segmentKeys(threadId)).toEqual([]);

    for (let i = before; i < PACKED_RUNS; i++) await client.runs.wait(threadId, "agent", { input: ask(i) });
    await expect.poll(() => segmentKeys(threadId)).toHaveLength(1);
    const later = await history(client, threadId);
    expect(later).toHaveLength(early.length + 18);
    expect(later.slice(18)).toEqual(early);

    const oldest = JSON.parse(early[early.length - 2] as string) as { checkpoint: { checkpoint_id: string } };
    const atOld = await client.threads.getState(threadId, oldest.checkpoint.checkpoint_id);
    expect(JSON.stringify(atOld)).toBe(early[early.length - 2]);
    expect(await history(client, threadId, { before: oldest.checkpoint.checkpoint_id })).toEqual(early.slice(-1));

    const state = await client.threads.getState<{ messages: { content: string }[] }>(threadId);
    expect(state.values.messages).toHaveLength(PACKED_RUNS * 2);
    expect(state.values.messages[0]?.content).toBe("question 0");

    const copy = await client.threads.copy(threadId);
    const copied = await history(client, copy.thread_id);
    expect(copied.map((entry) => entry.replaceAll(copy.thread_id, threadId))).toEqual(later);

    await client.threads.delete(threadId);
    expect(await segmentKeys(threadId)).toEqual([]);
    expect(await segmentKeys(copy.thread_id)).toHaveLength(1);
  });

  it("lists, reads, cancels and deletes archived runs as it did before", async () => {
    const { client } = server;
    const { thread_id: threadId } = await client.threads.create();
    const archiveKey = `${prefix}runs:arc:${threadId}`;
    const due = DEFAULT_ARCHIVE_LIMITS.hot + DEFAULT_ARCHIVE_LIMITS.batch;
    for (let i = 0; i < due - 1; i++) await client.runs.wait(threadId, "agent", { input: ask(i) });
    const before = await client.runs.list(threadId, { limit: 100 });
    expect(await redis.exists(archiveKey)).toBe(0);

    await client.runs.wait(threadId, "agent", { input: ask(due) });
    await expect.poll(() => redis.exists(archiveKey)).toBe(1);
    const after = await client.runs.list(threadId, { limit: 100 });
    expect(after.slice(1)).toEqual(before);
    expect(await client.runs.list(threadId, { limit: 5, offset: 30 })).toEqual(after.slice(30, 35));
    const oldest = before[before.length - 1] as (typeof before)[number];
    expect(await client.runs.get(threadId, oldest.run_id)).toEqual(oldest);
    // A finished run is left as it is (202), archived or not.
    await client.runs.cancel(threadId, oldest.run_id);
    expect(await client.runs.get(threadId, oldest.run_id)).toEqual(oldest);

    await client.runs.delete(threadId, oldest.run_id);
    await expect(client.runs.get(threadId, oldest.run_id)).rejects.toMatchObject({ status: 404 });
    await client.threads.delete(threadId);
    await expect.poll(() => redis.exists(archiveKey)).toBe(0);
  });
});
