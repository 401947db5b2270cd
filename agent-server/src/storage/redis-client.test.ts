import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl } from "../../../testing/redis.ts";
import { connectRedis, pingWithin, type RedisClient } from "./redis-client.ts";

describe("pingWithin", () => {
  let client: RedisClient;

  beforeAll(async () => {
    client = await connectRedis(testRedisUrl());
  });
  afterAll(async () => {
    await client?.close();
  });

  it("answers a ping whose reply arrived while this process was blocked past the timeout", async () => {
    const ping = pingWithin(client);
    // The reply comes back within a millisecond; the event loop is not there to read it for 2.5 s.
    const until = Date.now() + 2500;
    while (Date.now() < until) {
      // busy: what a long synchronous task in a graph or a starved CPU looks like to the timers
    }
    await expect(ping).resolves.toBeUndefined();
  });
});
