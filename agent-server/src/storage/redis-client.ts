import type { Logger } from "@agentplane/common";
import { createClient, type RedisClientType } from "redis";

export type RedisClient = RedisClientType;

/**
 * Connects to Redis. Errors after the first connect are logged (node-redis reconnects by
 * itself) instead of crashing the process on an unhandled 'error' event.
 */
export async function connectRedis(url: string, logger?: Logger): Promise<RedisClient> {
  const client: RedisClient = createClient({ url });
  client.on("error", (error: unknown) => logger?.error({ err: error }, "redis connection error"));
  await client.connect();
  return client;
}
