import { deltaChannelHistoryTests, validate } from "@langchain/langgraph-checkpoint-validation";
import type { RedisClientType } from "redis";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import { MemoryCheckpointer } from "./memory.ts";
import { RedisCheckpointer } from "./redis.ts";
import { PackingCheckpointer } from "./testing/packing-checkpointer.ts";

// The official LangGraph checkpointer suite calls vitest through globals.
Object.assign(globalThis, { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it });

let client: RedisClientType;

async function removeKeys(prefix: string): Promise<void> {
  for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 })) {
    if (keys.length > 0) await client.unlink(keys);
  }
}

const redisInitializer = {
  // Not a name the suite skips anything for: every spec, including channel deltas, runs.
  checkpointerName: "RedisCheckpointer",
  async beforeAll() {
    client = await connectTestRedis();
  },
  async afterAll() {
    await client.quit();
  },
  createCheckpointer: () => new RedisCheckpointer(client, { prefix: uniquePrefix("cpv") }),
  destroyCheckpointer: (checkpointer: RedisCheckpointer) => removeKeys(checkpointer.keys.base),
};

// MemoryCheckpointer stores exactly as MemorySaver does, so the suite's MemorySaver
// exemption (no per-version channel storage) is the one that applies.
const memoryInitializer = {
  checkpointerName: "MemorySaver",
  createCheckpointer: () => new MemoryCheckpointer(),
};

describe("MemoryCheckpointer (LangGraph checkpointer validation suite)", () => {
  validate(memoryInitializer);
  deltaChannelHistoryTests(memoryInitializer);
});

describe("RedisCheckpointer (LangGraph checkpointer validation suite)", () => {
  validate(redisInitializer);
  deltaChannelHistoryTests(redisInitializer);
});

// Every checkpoint but the latest of its namespace read from a cold segment.
const packingInitializer = {
  ...redisInitializer,
  createCheckpointer: () => new PackingCheckpointer(client, uniquePrefix("cpp")),
};

describe("RedisCheckpointer with cold segments (LangGraph checkpointer validation suite)", () => {
  validate(packingInitializer);
  deltaChannelHistoryTests(packingInitializer);
});
