import type { RedisClientType } from "redis";
import { afterAll, beforeAll, describe } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import { MemoryCheckpointer } from "./memory.ts";
import { RedisCheckpointer } from "./redis.ts";
import { threadCheckpointerContract } from "./testing/contract.ts";

describe("MemoryCheckpointer copy/prune/delete", () => {
  threadCheckpointerContract(async () => new MemoryCheckpointer());
});

describe("RedisCheckpointer copy/prune/delete", () => {
  let client: RedisClientType;
  beforeAll(async () => {
    client = await connectTestRedis();
  });
  afterAll(() => client.quit());
  threadCheckpointerContract(
    async () => new RedisCheckpointer(client, { prefix: uniquePrefix("cpc") }),
    async (checkpointer) => {
      const { base } = (checkpointer as RedisCheckpointer).keys;
      for await (const keys of client.scanIterator({ MATCH: `${base}*` })) if (keys.length) await client.unlink(keys);
    },
  );
});
