import type { RedisClientType } from "redis";
import { afterAll, beforeAll, describe } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import { MemoryCheckpointer } from "./memory.ts";
import { RedisCheckpointer } from "./redis.ts";
import { threadCheckpointerContract } from "./testing/contract.ts";
import { PackingCheckpointer } from "./testing/packing-checkpointer.ts";

describe("MemoryCheckpointer copy/prune/delete", () => {
  threadCheckpointerContract(async () => new MemoryCheckpointer());
});

describe("RedisCheckpointer copy/prune/delete", () => {
  let client: RedisClientType;
  beforeAll(async () => {
    client = await connectTestRedis();
  });
  afterAll(() => client.quit());
  const removeKeys = async (checkpointer: unknown) => {
    const { base } = (checkpointer as RedisCheckpointer).keys;
    for await (const keys of client.scanIterator({ MATCH: `${base}*` })) if (keys.length) await client.unlink(keys);
  };
  threadCheckpointerContract(async () => new RedisCheckpointer(client, { prefix: uniquePrefix("cpc") }), removeKeys);
  describe("with cold segments", () => {
    threadCheckpointerContract(async () => new PackingCheckpointer(client, uniquePrefix("cpcp")), removeKeys);
  });
});
