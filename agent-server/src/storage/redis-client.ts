import type { Logger } from "@agentplane/common";
import { createClient } from "redis";

export type RedisClient = ReturnType<typeof createClient>;

/**
 * Connects to Redis. Errors after the first connect are logged (node-redis reconnects by
 * itself) instead of crashing the process on an unhandled 'error' event.
 */
export async function connectRedis(url: string, logger?: Logger): Promise<RedisClient> {
  const client = createClient({ url });
  client.on("error", (error: unknown) => logger?.error({ err: error }, "redis connection error"));
  await client.connect();
  return client;
}
