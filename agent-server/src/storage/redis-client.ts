import type { Logger } from "@agentplane/common";
import { createClient, type RedisClientType } from "redis";

export type RedisClient = RedisClientType;

/**
 * Connects to Redis. Errors after the first connect are logged (node-redis reconnects by
 * itself) instead of crashing the process on an unhandled 'error' event.
 *
 * No per-command timeout: node-redis arms a timer and an AbortSignal for every command when one
 * is set, a few percent of a run's CPU. A dead connection is found by the socket (keep-alive) and
 * reconnected; a worker that loses Redis loses its run leases, and the run is taken over elsewhere.
 */
export async function connectRedis(url: string, logger?: Logger): Promise<RedisClient> {
  const client: RedisClient = createClient({ url, commandOptions: { timeout: undefined } });
  client.on("error", (error: unknown) => logger?.error({ err: error }, "redis connection error"));
  await client.connect();
  return client;
}
