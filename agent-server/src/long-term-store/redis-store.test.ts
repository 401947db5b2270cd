import type { RedisClientType } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import { eventually } from "../runs/testing/wait.ts";
import { RedisStore } from "./redis-store.ts";

describe("RedisStore indexes", () => {
  let client: RedisClientType;
  const keysUnder = async (store: RedisStore) => {
    const found: string[] = [];
    for await (const keys of client.scanIterator({ MATCH: `${store.keys.base}*` })) found.push(...keys);
    return found.sort();
  };

  beforeAll(async () => {
    client = await connectTestRedis();
  });
  afterAll(() => client.quit());

  it("the background sweeper removes expired items and every index entry pointing at them", async () => {
    const store = new RedisStore(client, { prefix: uniquePrefix("storeidx"), ttl: { sweepIntervalMinutes: 0.005 } });
    await store.put(["gone", "soon"], "a", { v: 1 }, undefined, { ttl: 0.002 });
    await store.put(["kept"], "b", { v: 2 });
    store.start();
    try {
      const kept = [store.keys.namespaces(), store.keys.updates("kept"), store.keys.values("kept")].sort();
      // The 2 ms TTL is long over by the first sweep (every 0.3 s): wait for it to have run.
      const left = await eventually(
        () => keysUnder(store),
        (keys) => keys.join() === kept.join(),
        5000,
      );
      expect(left).toEqual(kept);
      expect(await client.zRange(store.keys.namespaces(), 0, -1)).toEqual(["kept"]);
    } finally {
      store.stop();
      await client.unlink(await keysUnder(store));
    }
  });

  it("deleting the last item of a namespace drops it from the namespace index", async () => {
    const store = new RedisStore(client, { prefix: uniquePrefix("storeidx") });
    await store.put(["a", "b"], "k", { v: 1 });
    await store.delete(["a", "b"], "k");
    expect(await keysUnder(store)).toEqual([]);
  });
});
