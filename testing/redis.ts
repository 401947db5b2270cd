import { randomUUID } from "node:crypto";
import { createClient, type RedisClientType } from "redis";
import { inject } from "vitest";

export function testRedisUrl(): string {
  return inject("redisUrl");
}

/** A key prefix unique to the caller, so test files sharing one Redis never see each other's keys. */
export function uniquePrefix(label = "t"): string {
  return `${label}:${randomUUID().slice(0, 8)}:`;
}

export async function connectTestRedis(): Promise<RedisClientType> {
  const client: RedisClientType = createClient({ url: testRedisUrl() });
  await client.connect();
  return client;
}
