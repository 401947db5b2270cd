import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import type { RedisClient } from "../storage/redis-client.ts";
import type { Thread, ThreadSearch, ThreadStatus } from "../storage/types.ts";
import { compareThreads, matchesThread } from "./records.ts";
import { RedisThreadStore, type SearchTuning } from "./redis-store.ts";

const STATUSES: ThreadStatus[] = ["idle", "busy", "interrupted", "error"];

/** Every way of paging an intersection, forced one at a time. */
const tunings: [string, SearchTuning][] = [
  ["default", { smallIntersection: 2000, scanBudget: 10_000 }],
  ["scan only", { smallIntersection: 0, scanBudget: 1_000_000 }],
  ["scan that gives up early", { smallIntersection: 0, scanBudget: 40 }],
  ["whole intersection (ZINTER)", { smallIntersection: 1_000_000, scanBudget: 0 }],
  ["stored intersection (ZINTERSTORE)", { smallIntersection: 0, scanBudget: 0 }],
];

describe("redis thread search paths", () => {
  let client: RedisClient;
  const prefix = uniquePrefix("thread-paths");
  const threads = new Map<string, Thread>();

  beforeAll(async () => {
    client = (await connectTestRedis()) as RedisClient;
    const store = new RedisThreadStore(client, prefix);
    const created = await Promise.all(
      Array.from({ length: 600 }, (_, i) => store.create({ metadata: { g: i % 3, h: `h${i % 7}` } })),
    );
    for (const thread of created) threads.set(thread.thread_id, thread);
    // Threads with g=1 are updated last, so the newest updates are skewed away from g=0 and g=2.
    const order = [...created].sort((a, b) => Number(a.metadata.g === 1) - Number(b.metadata.g === 1));
    for (const [i, thread] of order.entries()) {
      const updated = await store.update(thread.thread_id, { status: STATUSES[i % 4], state_updated: i % 5 === 0 });
      if (updated) threads.set(updated.thread_id, updated);
    }
  });
  afterAll(() => client.close());

  const queries: Partial<ThreadSearch>[] = [];
  for (const sort_by of ["created_at", "updated_at", "status", "thread_id"] as const) {
    for (const sort_order of ["asc", "desc"] as const) {
      for (const filter of [
        { metadata: { g: 0 } },
        { metadata: { g: 2, h: "h3" } },
        { status: "busy" as const, metadata: { g: 0 } },
        { status: "error" as const, metadata: { h: "h1", g: 1 } },
      ]) {
        for (const offset of [0, 7, 150]) queries.push({ ...filter, sort_by, sort_order, offset, limit: 5 });
      }
    }
  }

  it.each(tunings)("pages every filtered sort order like the in-memory rules (%s)", async (_name, tuning) => {
    const store = new RedisThreadStore(client, prefix, tuning);
    for (const query of queries) {
      const search = { limit: 10, offset: 0, sort_by: "created_at", sort_order: "desc", ...query } as ThreadSearch;
      const expected = [...threads.values()]
        .filter((thread) => matchesThread(thread, search))
        .sort(compareThreads(search.sort_by, search.sort_order));
      const page = await store.search(search);
      expect(page.total, JSON.stringify(query)).toBe(expected.length);
      expect(
        page.items.map((t) => t.thread_id),
        JSON.stringify(query),
      ).toEqual(expected.slice(search.offset, search.offset + search.limit).map((t) => t.thread_id));
    }
  });
});

describe("redis thread update from a record the caller already read", () => {
  let client: RedisClient;
  const prefix = uniquePrefix("thread-known");
  beforeAll(async () => {
    client = (await connectTestRedis()) as RedisClient;
  });
  afterAll(() => client.close());

  it("applies to the stored record, also when the given one is stale or the thread is gone", async () => {
    const store = new RedisThreadStore(client, prefix);
    const read = await store.create({ metadata: { a: 1 } });
    const current = await store.update(read.thread_id, { status: "busy" }, read);
    expect(current).toMatchObject({ status: "busy", metadata: { a: 1 } });
    // `read` is stale now: the update must not bring back its idle status or lose `b`.
    await store.update(read.thread_id, { metadata: { b: 2 } });
    const updated = await store.update(read.thread_id, { values: { x: 1 } }, read);
    expect(updated).toMatchObject({ status: "busy", metadata: { a: 1, b: 2 }, values: { x: 1 } });
    expect(await store.get(read.thread_id)).toEqual(updated);
    expect(
      await store.search({ status: "busy", limit: 10, offset: 0, sort_by: "created_at", sort_order: "desc" }),
    ).toMatchObject({
      items: [{ thread_id: read.thread_id }],
    });
    await store.delete(read.thread_id);
    expect(await store.update(read.thread_id, { status: "idle" }, read)).toBeUndefined();
    expect(await store.get(read.thread_id)).toBeUndefined();
  });
});
