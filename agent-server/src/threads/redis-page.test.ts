import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import { RedisCheckpointer } from "../checkpoint/redis.ts";
import type { RedisClient } from "../storage/redis-client.ts";
import type { Thread, ThreadSearch } from "../storage/types.ts";
import { CheckpointValues } from "../stream/references.ts";
import { compareThreads, matchesThread } from "./records.ts";
import { threadKeys } from "./redis-index.ts";
import { indexPage } from "./redis-page.ts";
import { RedisThreadStore } from "./redis-store.ts";

/** Searches one index answers whole (the owner's own threads under custom auth): pages, totals, records. */
describe("redis thread search from one index", () => {
  let client: RedisClient;
  let store: RedisThreadStore;
  const prefix = uniquePrefix("thread-index-page");
  const keys = threadKeys(prefix);
  const threads: Thread[] = [];

  beforeAll(async () => {
    client = (await connectTestRedis()) as RedisClient;
    store = new RedisThreadStore(client, prefix, new CheckpointValues(new RedisCheckpointer(client, { prefix })));
    for (let i = 0; i < 60; i++) threads.push(await store.create({ metadata: { owner: `user-${i % 4}`, n: i } }));
  });
  afterAll(() => client.close());

  const searches: Partial<ThreadSearch>[] = [];
  for (const sort_order of ["asc", "desc"] as const) {
    for (const [offset, limit] of [
      [0, 5],
      [3, 4],
      [12, 10],
      [15, 1],
      [40, 10],
    ]) {
      searches.push({ metadata: { owner: "user-1" }, sort_order, offset, limit });
      searches.push({ sort_order, offset, limit });
      searches.push({ status: "idle", sort_by: "thread_id", sort_order, offset, limit });
      searches.push({ status: "error", sort_order, offset, limit });
    }
  }

  it.each(searches)("answers %j as a scan of every thread would", async (query) => {
    const search = { sort_by: "created_at", limit: 10, offset: 0, sort_order: "desc", ...query } as ThreadSearch;
    const matching = threads
      .filter((thread) => matchesThread(thread, search))
      .sort(compareThreads(search.sort_by, search.sort_order));
    const page = await store.search(search);
    expect(page.total).toBe(matching.length);
    expect(page.items).toEqual(matching.slice(search.offset, search.offset + search.limit));
    expect(await store.count(search)).toBe(matching.length);
  });

  it("reads the index's size and the page's records in one call, nothing past the page", async () => {
    const owned = threads
      .filter((thread) => thread.metadata.owner === "user-2")
      .sort(compareThreads("created_at", "desc"));
    const index = keys.metadata("owner", "user-2");
    const newest = await indexPage(client, index, keys.record(""), {
      sort_by: "created_at",
      sort_order: "desc",
      offset: 1,
      limit: 3,
    });
    expect({ ...newest, items: newest.items.map((raw) => JSON.parse(raw)) }).toEqual({
      total: owned.length,
      items: owned.slice(1, 4),
    });
    const past = await indexPage(client, index, keys.record(""), {
      sort_by: "created_at",
      sort_order: "asc",
      offset: owned.length,
      limit: 3,
    });
    expect(past).toEqual({ total: owned.length, items: [] });
  });
});
