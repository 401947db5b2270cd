import type { RedisClientType } from "redis";

/** What the `growth` area reads from Redis: bytes it received and memory kept under a prefix. */

export type Redis = RedisClientType;

/** Bytes Redis received so far (`INFO stats` `total_net_input_bytes`). */
export async function bytesIn(redis: Redis): Promise<number> {
  const info = await redis.info("stats");
  return Number(/^total_net_input_bytes:(\d+)/m.exec(info)?.[1]);
}

/** Redis memory of every key under `prefix`, split into run event logs (which expire) and the rest. */
export async function memoryOf(
  redis: Redis,
  prefix: string,
): Promise<{ kept: number; eventLogs: number; byKey: Map<string, number> }> {
  const keys: string[] = [];
  for await (const page of redis.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) keys.push(...page);
  const sizes = await Promise.all(
    keys.map((key) => redis.sendCommand(["MEMORY", "USAGE", key, "SAMPLES", "0"]) as Promise<number | null>),
  );
  let kept = 0;
  let eventLogs = 0;
  for (const [i, key] of keys.entries()) {
    if (key.startsWith(`${prefix}runs:ev:`)) eventLogs += sizes[i] ?? 0;
    else kept += sizes[i] ?? 0;
  }
  return { kept, eventLogs, byKey: new Map(keys.map((key, i) => [key, sizes[i] ?? 0])) };
}

/**
 * The kind of a key of one conversation: its name with the thread's ids, scope and run or
 * checkpoint ids taken out (`cp:c:<scope>:<id>` for every checkpoint record, and so on).
 */
export const keyKind = (key: string, prefix: string) =>
  key
    .slice(prefix.length)
    .replace(/\["[^"]*","[^"]*"\]/g, "<scope>")
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<id>");
