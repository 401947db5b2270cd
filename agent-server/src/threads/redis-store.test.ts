import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import { RedisCheckpointer } from "../checkpoint/redis.ts";
import type { RedisClient } from "../storage/redis-client.ts";
import type { Thread, ThreadSearch, ThreadStatus } from "../storage/types.ts";
import { CheckpointValues } from "../stream/references.ts";
import { compareThreads, matchesThread } from "./records.ts";
import { threadKeys } from "./redis-index.ts";
import { type Intersection, intersectPage, RedisThreadStore, scanPage, storedIntersectPage } from "./redis-store.ts";

const STATUSES: ThreadStatus[] = ["idle", "busy", "interrupted", "error"];

describe("redis thread search paths", () => {
  let client: RedisClient;
  const prefix = uniquePrefix("thread-paths");
  const threads = new Map<string, Thread>();

  beforeAll(async () => {
    client = (await connectTestRedis()) as RedisClient;
    const store = new RedisThreadStore(client, prefix, new CheckpointValues(new RedisCheckpointer(client, { prefix })));
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

  const searchOf = (query: Partial<ThreadSearch>) =>
    ({ limit: 10, offset: 0, sort_by: "created_at", sort_order: "desc", ...query }) as ThreadSearch;
  const expectedPage = (search: ThreadSearch) =>
    [...threads.values()]
      .filter((thread) => matchesThread(thread, search))
      .sort(compareThreads(search.sort_by, search.sort_order))
      .slice(search.offset, search.offset + search.limit)
      .map((t) => t.thread_id);
  /** The query's indexes: the one in its sort order (the status one, or all threads) drives, metadata ones filter. */
  const intersectionOf = (search: ThreadSearch): Intersection => {
    const keys = threadKeys(prefix);
    return {
      driver: search.status ? keys.status(search.status, search.sort_by) : keys.sort(search.sort_by),
      others: Object.entries(search.metadata ?? {}).map(([key, value]) => keys.metadata(key, value)),
    };
  };

  it("pages every filtered sort order like the in-memory rules", async () => {
    const store = new RedisThreadStore(client, prefix, new CheckpointValues(new RedisCheckpointer(client, { prefix })));
    for (const query of queries) {
      const search = searchOf(query);
      const expected = [...threads.values()].filter((thread) => matchesThread(thread, search));
      const page = await store.search(search);
      expect(page.total, JSON.stringify(query)).toBe(expected.length);
      expect(
        page.items.map((t) => t.thread_id),
        JSON.stringify(query),
      ).toEqual(expectedPage(search));
    }
  });

  // Each way search may page an intersection, on every query: the store picks one by the sizes involved.
  it("pages by walking the driving index in order (scan)", async () => {
    for (const query of queries) {
      const search = searchOf(query);
      expect(await scanPage(client, intersectionOf(search), search, 1_000_000), JSON.stringify(query)).toEqual(
        expectedPage(search),
      );
    }
  });

  it("gives a scan up after its budget of steps, never returning a short page", async () => {
    let gaveUp = 0;
    for (const query of queries) {
      const search = searchOf(query);
      const page = await scanPage(client, intersectionOf(search), search, 40);
      if (page === undefined) gaveUp++;
      else expect(page, JSON.stringify(query)).toEqual(expectedPage(search));
    }
    expect(gaveUp).toBeGreaterThan(0);
    expect(gaveUp).toBeLessThan(queries.length);
  });

  it("pages a whole intersection (ZINTER)", async () => {
    for (const query of queries) {
      const search = searchOf(query);
      expect(await intersectPage(client, intersectionOf(search), search), JSON.stringify(query)).toEqual(
        expectedPage(search),
      );
    }
  });

  it("pages a stored intersection (ZINTERSTORE) and removes it", async () => {
    const scratch = `${prefix}threads:scratch:test`;
    for (const query of queries) {
      const search = searchOf(query);
      expect(await storedIntersectPage(client, scratch, intersectionOf(search), search), JSON.stringify(query)).toEqual(
        expectedPage(search),
      );
    }
    expect(await client.exists(scratch)).toBe(0);
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
    const store = new RedisThreadStore(client, prefix, new CheckpointValues(new RedisCheckpointer(client, { prefix })));
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
