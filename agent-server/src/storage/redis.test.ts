import { describe } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { createRedisStorage } from "./redis.ts";
import { storageContract } from "./testing/contract.ts";

describe("redis storage", () => {
  storageContract(() => createRedisStorage({ url: testRedisUrl(), prefix: uniquePrefix("storage") }));
});
