import { describe } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../../testing/redis.ts";
import { createRedisRunBackend } from "./backend.ts";
import { createMemoryRunBackend } from "./memory-backend.ts";
import { runBackendContract } from "./testing/contract.ts";

describe("memory run backend", () => {
  runBackendContract(async () => createMemoryRunBackend(), { leasesExpire: false });
});

describe("redis run backend", () => {
  runBackendContract(() => createRedisRunBackend({ url: testRedisUrl(), prefix: uniquePrefix("runs") }), {
    leasesExpire: true,
  });
});
