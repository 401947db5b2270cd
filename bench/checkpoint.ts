import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { RedisCheckpointer } from "../agent-server/src/checkpoint/redis.ts";
import { connectRedis } from "../agent-server/src/storage/redis-client.ts";
import { measureThroughput, round } from "./support/measure.ts";
import type { BenchResult } from "./types.ts";

const CLIENTS = 32;
const DURATION_MS = 3_000;
const WARMUP_MS = 500;
const PREFIX = "bench-checkpoint:";

/** A chat-like step: the new message is the only changed channel, as in a real agent loop. */
function step(i: number) {
  const checkpoint = emptyCheckpoint();
  checkpoint.id = uuid6(-1);
  checkpoint.channel_values = {
    messages: [{ role: "user", content: `message ${i} `.repeat(20) }],
    next: "agent",
  };
  checkpoint.channel_versions = { messages: i, next: 1 };
  return checkpoint;
}

/** Redis checkpointer: puts (one per thread step) and latest-checkpoint reads from 32 concurrent clients. */
export async function run(redisUrl: string): Promise<BenchResult[]> {
  const client = await connectRedis(redisUrl);
  const saver = new RedisCheckpointer(client, { prefix: PREFIX });
  const configs = Array.from({ length: CLIENTS }, (_, worker) => ({
    configurable: { thread_id: `bench-${worker}`, checkpoint_ns: "" } as Record<string, unknown>,
  }));
  try {
    let steps = 0;
    const putStep = async (worker: number) => {
      const config = configs[worker] as (typeof configs)[number];
      steps += 1;
      const next = await saver.put(
        config,
        step(steps),
        { source: "loop", step: steps, parents: {} },
        { messages: steps },
      );
      config.configurable = next.configurable as Record<string, unknown>;
      await saver.putWrites(next, [["messages", { role: "ai", content: "ok" }]], `task-${steps}`);
    };
    await measureThroughput(CLIENTS, WARMUP_MS, putStep);
    const puts = await measureThroughput(CLIENTS, DURATION_MS, putStep);
    const gets = await measureThroughput(CLIENTS, DURATION_MS, (worker) =>
      saver.getTuple({ configurable: { thread_id: `bench-${worker}`, checkpoint_ns: "" } }),
    );
    return [
      { name: `checkpoint put + putWrites (${CLIENTS} clients)`, value: round(puts, 0), unit: "steps/s" },
      { name: `checkpoint getTuple latest (${CLIENTS} clients)`, value: round(gets, 0), unit: "ops/s" },
    ];
  } finally {
    for await (const keys of client.scanIterator({ MATCH: `${PREFIX}*`, COUNT: 1000 })) {
      if (keys.length > 0) await client.unlink(keys);
    }
    await client.quit();
  }
}
