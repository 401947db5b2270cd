import { describe } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../test/support/redis.ts";
import { storageContract } from "./contract.ts";
import { createRedisStorage } from "./redis.ts";

describe("redis storage", () => {
  storageContract(() => createRedisStorage({ url: testRedisUrl(), prefix: uniquePrefix("storage") }));
});
