import type { RedisClientType } from "redis";
import { afterAll, beforeAll, beforeEach } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../../testing/redis.ts";
import { RedisCheckpointer } from "../redis.ts";

/**
 * For a suite of Redis checkpointer tests: one connection to the test Redis for the suite and a
 * key prefix of its own for each test. `saver()` is a new checkpointer on them, which remembers
 * nothing another one did: what another process would be.
 */
export function redisSavers(label: string): { readonly client: RedisClientType; saver(): RedisCheckpointer } {
  let client: RedisClientType | undefined;
  let prefix = "";
  beforeAll(async () => {
    client = await connectTestRedis();
  });
  afterAll(() => client?.quit());
  beforeEach(() => {
    prefix = uniquePrefix(label);
  });
  const connected = () => {
    if (!client) throw new Error("the test Redis is connected in beforeAll");
    return client;
  };
  return {
    get client() {
      return connected();
    },
    saver: () => new RedisCheckpointer(connected(), { prefix }),
  };
}
