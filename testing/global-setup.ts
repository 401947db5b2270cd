import type { TestProject } from "vitest/node";
import { hasRedisServerBinary, startRedisServer } from "./redis-server.ts";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

async function dockerAvailable(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

/**
 * Gives every test file one Redis: `REDIS_URI` if set, else a local `redis-server` on a free
 * port, else a testcontainers Redis where a Docker engine runs. Files isolate themselves by key
 * prefix (see `testing/redis.ts`).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.REDIS_URI) {
    project.provide("redisUrl", process.env.REDIS_URI);
    return async () => {};
  }
  if (hasRedisServerBinary()) {
    const redis = await startRedisServer();
    project.provide("redisUrl", redis.url);
    return () => redis.stop();
  }
  if (await dockerAvailable()) {
    const { RedisContainer } = await import("@testcontainers/redis");
    const container = await new RedisContainer("redis:7-alpine").start();
    project.provide("redisUrl", container.getConnectionUrl());
    return async () => {
      await container.stop();
    };
  }
  throw new Error(
    "The tests need Redis 7 and found none: install redis-server (Debian: `apt-get install redis-server`), " +
      "start a Docker engine for testcontainers, or set REDIS_URI to a Redis you own.",
  );
}
