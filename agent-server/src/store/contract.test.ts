import type { RedisClientType } from "redis";
import { afterAll, beforeAll, describe } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../test/support/redis.ts";
import { longTermStoreContract } from "./contract.ts";
import { MemoryStore } from "./memory.ts";
import { RedisStore } from "./redis.ts";

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
