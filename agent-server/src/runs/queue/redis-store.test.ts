import { inflateRawSync } from "node:zlib";
import { RESP_TYPES } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../../testing/redis.ts";
import type { RedisClient } from "../../storage/redis-client.ts";
import type { Run } from "../schemas.ts";
import { eventually } from "../testing/wait.ts";
import { RedisRunStore } from "./redis-store.ts";
import { newRun } from "./testing/contract.ts";

// What the Redis store does beyond the contract both backends follow (testing/contract.ts) and the
// scripts' transitions (redis-scripts-*.test.ts): the arguments it gives the scripts, and the
// archives of old finished runs (redis-archive.ts).

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

const input = (i: number) => ({
  input: { messages: [{ role: "human", content: `question ${i}: ${"why? ".repeat(20)}` }] },
});

/** Runs of one thread, each enqueued, claimed and finished in turn, as a conversation makes them. */
async function conversation(store: RedisRunStore, threadId: string, count: number, from = 0): Promise<string[]> {
  const ids: string[] = [];
  for (let i = from; i < from + count; i++) {
    const runId = `${threadId}-run-${String(i).padStart(3, "0")}`;
    await store.enqueue(newRun(runId, threadId, input(i)), { startAt: Date.now(), rejectIfBusy: false });
    const claimed = (await store.claim(60_000)).claimed as { attempt: number };
    await store.finish(runId, claimed.attempt, i % 5 === 4 ? "error" : "success", closing);
    ids.push(runId);
  }
  return ids;
}

describe("RedisRunStore archiving old finished runs (redis-archive.ts)", () => {
  const store = (prefix: string, batch = 4) => new RedisRunStore(redis, prefix, undefined, { hot: 2, batch });
  const archives = async (prefix: string, threadId: string) => {
    const all = await redis.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer }).hGetAll(`${prefix}arc:${threadId}`);
    return Object.entries(all);
  };
  /** Redis memory of the run records and archives under `prefix` (not the event logs, which expire). */
  const memory = async (prefix: string) => {
    let total = 0;
    for await (const keys of redis.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) {
      for (const key of keys) {
        if (/:(run|arc|tr):/.test(key)) total += (await redis.memoryUsage(key, { SAMPLES: 0 })) ?? 0;
      }
    }
    return total;
  };
  /** Two records of the same runs, made at other times. */
  const alike = (runs: (Run | undefined)[]) => runs.map((run) => run && { ...run, created_at: "", updated_at: "" });
  const all = { limit: 100, offset: 0 };

  /** Run records under `prefix` that still hold their `json`. */
  const unarchived = async (prefix: string) => {
    let count = 0;
    for await (const keys of redis.scanIterator({ MATCH: `${prefix}run:*`, COUNT: 1000 })) {
      for (const key of keys) count += await redis.hExists(key, "json");
    }
    return count;
  };

  it("reads and lists every run as it was once older ones are archived, in less than half the memory", async () => {
    const [prefix, plainPrefix] = [uniquePrefix("arc"), uniquePrefix("arc")];
    const archiving = store(prefix);
    const plain = store(plainPrefix, Number.MAX_SAFE_INTEGER);
    await conversation(plain, "T", 40);
    const ids = await conversation(archiving, "T", 40);
    // Archived in the background as runs finish: all but the latest few.
    await expect.poll(() => unarchived(prefix)).toBeLessThan(2 + 4);
    const listed = await archiving.list("T", all);
    expect(listed.map((run) => run.run_id)).toEqual([...ids].reverse());
    expect(alike(listed)).toEqual(alike(await plain.list("T", all)));
    const page = { limit: 3, offset: 8, status: "success" as const };
    expect(alike(await archiving.list("T", page))).toEqual(alike(await plain.list("T", page)));
    for (const runId of ids) expect(await archiving.get(runId)).toEqual(listed.find((run) => run.run_id === runId));
    // Another process, whose cache never saw the archive.
    expect(await store(prefix).get(ids[0] as string)).toEqual(await archiving.get(ids[0] as string));
    expect(await memory(prefix)).toBeLessThan((await memory(plainPrefix)) / 2);
  });

  it("takes a deleted run out of its archive, and drops the archive with the thread's last run", async () => {
    const prefix = uniquePrefix("arc");
    const ids = await conversation(store(prefix, Number.MAX_SAFE_INTEGER), "D", 8);
    const archiving = store(prefix);
    expect(await archiving.archive("D")).toBe(true);
    const first = ids[0] as string;
    expect(await archiving.delete(first)).toBe("deleted");
    expect(await archiving.get(first)).toBeUndefined();
    const [[, archive]] = (await archives(prefix, "D")) as [[string, Buffer]];
    const kept = JSON.parse(inflateRawSync(archive).toString()) as Record<string, unknown>;
    expect(Object.keys(kept)).toEqual(ids.slice(1, 6));
    expect(JSON.stringify(kept)).not.toContain("question 0:");
    expect(await archiving.cancel(ids[1] as string, "interrupt")).toBe("finished");
    expect((await archiving.get(ids[1] as string))?.status).toBe("success");
    for (const runId of ids.slice(1)) expect(await archiving.delete(runId)).toBe("deleted");
    expect(await redis.exists(`${prefix}arc:D`)).toBe(0);
    expect(await archiving.list("D", all)).toEqual([]);
  });

  it("archives finished runs only, oldest first, up to one that is not", async () => {
    const prefix = uniquePrefix("arc");
    const ids = await conversation(store(prefix, Number.MAX_SAFE_INTEGER), "P", 3);
    const archiving = new RedisRunStore(redis, prefix, undefined, { hot: 0, batch: 2 });
    await archiving.enqueue(newRun("P-running", "P"), { startAt: Date.now(), rejectIfBusy: false });
    expect((await archiving.claim(60_000)).claimed?.run.run_id).toBe("P-running");
    expect(await archiving.archive("P")).toBe(true);
    expect(await redis.hExists(`${prefix}run:P-running`, "json")).toBe(1);
    for (const runId of ids) expect(await redis.hExists(`${prefix}run:${runId}`, "json")).toBe(0);
    expect((await archiving.get("P-running"))?.status).toBe("running");
  });

  it("gives up archiving a run deleted meanwhile, leaving every other record as it was", async () => {
    const prefix = uniquePrefix("arc");
    const archiving = store(prefix, Number.MAX_SAFE_INTEGER);
    const ids = await conversation(archiving, "R", 8);
    const before = await archiving.list("R", all);
    const [archived] = await Promise.all([store(prefix).archive("R"), archiving.delete(ids[1] as string)]);
    expect(await archiving.list("R", all)).toEqual(before.filter((run) => run.run_id !== ids[1]));
    if (archived) expect(JSON.stringify(await archives(prefix, "R"))).not.toContain("question 1:");
  });
});
