import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../../testing/redis.ts";
import type { RedisClient } from "../../storage/redis-client.ts";
import { eventually } from "../testing/wait.ts";
import { RedisRunStore } from "./redis-store.ts";
import { newRun } from "./testing/contract.ts";

// What the Redis store does beyond the contract both backends follow (testing/contract.ts) and the
// scripts' transitions (redis-scripts-*.test.ts): the arguments it gives the scripts.

let redis: RedisClient;

beforeAll(async () => {
  redis = (await connectTestRedis()) as RedisClient;
});
afterAll(async () => {
  await redis?.close();
});

const closing = { data: "{}", keepSeconds: 60 };

function setup() {
  const prefix = uniquePrefix("runs");
  return { prefix, store: new RedisRunStore(redis, prefix) };
}

describe("RedisRunStore", () => {
  it("takes a run claimed at creation over like any other when its worker dies", async () => {
    const { store } = setup();
    const created = await store.enqueue(newRun("r", "T"), {
      startAt: Date.now(),
      rejectIfBusy: false,
      claimLeaseMs: 1,
    });
    expect(created.outcome).toBe("claimed");
    const expired = await eventually(
      () => store.sweepExpired(3),
      (runs) => runs.length > 0,
      5000,
    );
    expect(expired).toEqual([{ runId: "r", threadId: "T", outcome: "pending", attempt: 1 }]);
    expect((await store.claim(10_000)).claimed).toMatchObject({ attempt: 2, resumed: true });
    expect(await store.finish("r", 1, "success", closing)).toBe(false);
  });

  it("lets the records of runs on temporary threads expire with their log", async () => {
    const { prefix, store } = setup();
    for (const [runId, threadId] of [
      ["kept", "K"],
      ["temp", "T"],
    ] as const) {
      await store.enqueue(newRun(runId, threadId), { startAt: Date.now(), rejectIfBusy: false });
    }
    const first = (await store.claim(10_000)).claimed;
    const second = (await store.claim(10_000)).claimed;
    for (const claimed of [first, second]) {
      const runId = claimed!.run.run_id;
      await store.finish(runId, claimed!.attempt, "success", { ...closing, temporary: runId === "temp" });
    }
    expect(await redis.ttl(`${prefix}run:temp`)).toBeGreaterThan(0);
    expect(await redis.ttl(`${prefix}tr:T`)).toBeGreaterThan(0);
    expect(await redis.ttl(`${prefix}run:kept`)).toBe(-1);
    expect(await redis.ttl(`${prefix}ev:kept`)).toBeGreaterThan(0);
  });
});
