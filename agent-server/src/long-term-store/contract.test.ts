import type { RedisClientType } from "redis";
import { afterAll, beforeAll, describe } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import { MemoryStore } from "./memory-store.ts";
import { RedisStore } from "./redis-store.ts";
import { longTermStoreContract } from "./testing/contract.ts";

describe("MemoryStore", () => {
  longTermStoreContract(async (options) => new MemoryStore(options));
});

describe("RedisStore", () => {
  let client: RedisClientType;
  beforeAll(async () => {
    client = await connectTestRedis();
  });
  afterAll(() => client.quit());
  longTermStoreContract(
    async (options) => new RedisStore(client, { ...options, prefix: uniquePrefix("store") }),
    async (store) => {
      for await (const keys of client.scanIterator({ MATCH: `${(store as RedisStore).keys.base}*` })) {
        if (keys.length > 0) await client.unlink(keys);
      }
    },
  );
});
