import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../../testing/redis.ts";
import type { RedisClient } from "../../storage/redis-client.ts";
import { RedisRunEventLog } from "../../stream/event-log.ts";
import type { Run } from "../schemas.ts";
import { RedisRunStore } from "./redis-store.ts";

let redis: RedisClient;
let subscriber: RedisClient;

beforeAll(async () => {
  redis = (await connectTestRedis()) as RedisClient;
  subscriber = redis.duplicate();
  await subscriber.connect();
});
afterAll(async () => {
  await subscriber?.close();
  await redis?.close();
});

const newRun = (runId: string, threadId: string): Run => ({
  run_id: runId,
  thread_id: threadId,
  assistant_id: "a",
  created_at: new Date().toISOString(),
  updated_at: new Date().toISOString(),
  status: "pending",
  metadata: {},
  multitask_strategy: "enqueue",
  kwargs: { config: {}, stream_mode: ["values"], subgraphs: false, resumable: false, temporary: false },
});

const closing = { data: "{}", keepSeconds: 60 };

function setup() {
  const prefix = uniquePrefix("runs");
  return { prefix, store: new RedisRunStore(redis, prefix), events: new RedisRunEventLog(redis, subscriber, prefix) };
}

const enqueue = (store: RedisRunStore, runId: string, threadId: string, startAt = Date.now(), rejectIfBusy = false) =>
  store.enqueue(newRun(runId, threadId), { startAt, rejectIfBusy }).then((result) => result.outcome);

describe("RedisRunStore", () => {
  it("claims one run per thread at a time, in arrival order, threads in parallel", async () => {
    const { store } = setup();
    await enqueue(store, "a1", "A");
    await enqueue(store, "a2", "A");
    await enqueue(store, "b1", "B");
    const first = (await store.claim(10_000)).claimed;
    const second = (await store.claim(10_000)).claimed;
    expect([first?.run.run_id, second?.run.run_id].sort()).toEqual(["a1", "b1"]);
    expect((await store.claim(10_000)).claimed).toBeUndefined();
    expect(first?.attempt).toBe(1);
    expect(await store.finish("a1", 1, "success", closing)).toBe(true);
    expect((await store.claim(10_000)).claimed?.run.run_id).toBe("a2");
    expect((await store.get("a1"))?.status).toBe("success");
    expect((await store.list("A", { limit: 10, offset: 0 })).map((run) => run.run_id)).toEqual(["a2", "a1"]);
  });

  it("keeps delayed runs pending until due and rejects runs on a busy thread when asked", async () => {
    const { store } = setup();
    await enqueue(store, "later", "T", Date.now() + 300);
    expect((await store.claim(10_000)).nextDueAt).toBeGreaterThan(Date.now());
    expect(await enqueue(store, "rejected", "T", Date.now(), true)).toBe("busy");
    expect(await store.get("rejected")).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 320));
    expect((await store.claim(10_000)).claimed?.run.run_id).toBe("later");
  });

  it("creates a given run id once: a second enqueue of it, even racing or after the run ended, leaves it alone", async () => {
    const { store } = setup();
    const outcomes = await Promise.all([1, 2, 3].map(() => enqueue(store, "slot", "T")));
    expect(outcomes.sort()).toEqual(["exists", "exists", "queued"]);
    expect(await store.queued("T")).toBe(1);
    const claimed = (await store.claim(10_000)).claimed;
    expect(await enqueue(store, "slot", "T")).toBe("exists");
    expect(await store.finish("slot", claimed?.attempt as number, "success", closing)).toBe(true);
    expect(await enqueue(store, "slot", "T")).toBe("exists");
    expect(await store.queued("T")).toBe(0);
    expect((await store.get("slot"))?.status).toBe("success");
    expect(await store.list("T", { limit: 10, offset: 0 })).toHaveLength(1);
  });

  it("claims a run at creation for a free local worker only when it is due and its thread has no other run", async () => {
    const { store } = setup();
    const claimNow = (runId: string, threadId: string, startAt = Date.now()) =>
      store.enqueue(newRun(runId, threadId), { startAt, rejectIfBusy: false, claimLeaseMs: 10_000 });
    const first = await claimNow("first", "T");
    expect(first).toMatchObject({
      outcome: "claimed",
      claimed: { attempt: 1, resumed: false, run: { status: "running" } },
    });
    expect((await store.get("first"))?.status).toBe("running");
    // The thread is taken: the next run queues behind it, in order, and nobody else can claim the first.
    expect((await claimNow("second", "T")).outcome).toBe("queued");
    expect((await store.claim(10_000)).claimed).toBeUndefined();
    expect((await store.inflight("T")).map((run) => run.run_id)).toEqual(["first", "second"]);
    expect(await store.renew("first", 1, 10_000)).toEqual({ lost: false, cancel: undefined });
    expect(await store.finish("first", 1, "success", closing)).toBe(true);
    expect((await store.claim(10_000)).claimed?.run.run_id).toBe("second");
    // Delayed runs are never claimed early.
    expect((await claimNow("later", "U", Date.now() + 60_000)).outcome).toBe("queued");
    expect((await store.get("later"))?.status).toBe("pending");
    expect((await claimNow("first", "V")).outcome).toBe("exists");
  });

  it("takes a run claimed at creation over like any other when its worker dies", async () => {
    const { store } = setup();
    const created = await store.enqueue(newRun("r", "T"), {
      startAt: Date.now(),
      rejectIfBusy: false,
      claimLeaseMs: 50,
    });
    expect(created.outcome).toBe("claimed");
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(await store.sweepExpired(3)).toEqual([{ runId: "r", threadId: "T", outcome: "pending", attempt: 1 }]);
    expect((await store.claim(10_000)).claimed).toMatchObject({ attempt: 2, resumed: true });
    expect(await store.finish("r", 1, "success", closing)).toBe(false);
  });

  it("cancels pending runs at once and signals running ones through the lease", async () => {
    const { store } = setup();
    await enqueue(store, "running", "T");
    await enqueue(store, "pending", "T");
    await enqueue(store, "gone", "T");
    const claimed = (await store.claim(10_000)).claimed;
    expect(await store.cancel("pending", "interrupt")).toBe("cancelled");
    expect(await store.cancel("gone", "rollback")).toBe("cancelled");
    expect((await store.get("pending"))?.status).toBe("interrupted");
    expect(await store.get("gone")).toBeUndefined();
    expect(await store.cancel("running", "rollback")).toBe("signalled");
    expect(await store.renew("running", claimed!.attempt, 10_000)).toEqual({ lost: false, cancel: "rollback" });
    expect(await store.queued("T")).toBe(0);
    expect(await store.cancel("missing", "interrupt")).toBe("missing");
  });

  it("requeues runs whose lease expired, fails them past max attempts, and fences the old holder", async () => {
    const { store } = setup();
    await enqueue(store, "r", "T");
    const first = (await store.claim(50)).claimed;
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(await store.sweepExpired(2)).toEqual([{ runId: "r", threadId: "T", outcome: "pending", attempt: 1 }]);
    const second = (await store.claim(50)).claimed;
    expect(second).toMatchObject({ attempt: 2, resumed: true, firstStartedAt: first?.firstStartedAt });
    expect(await store.renew("r", 1, 50)).toEqual({ lost: true });
    expect(await store.finish("r", 1, "success", closing)).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(await store.sweepExpired(2)).toEqual([{ runId: "r", threadId: "T", outcome: "error", attempt: 2 }]);
    expect((await store.get("r"))?.status).toBe("error");
    expect(await store.allInflight()).toEqual([]);
  });

  it("hands a run back on shutdown without counting the attempt", async () => {
    const { store } = setup();
    await enqueue(store, "r", "T");
    const claimed = (await store.claim(10_000)).claimed;
    await store.requeue("r", claimed!.attempt);
    expect((await store.get("r"))?.status).toBe("pending");
    expect((await store.claim(10_000)).claimed).toMatchObject({ attempt: 1, resumed: true });
  });

  it("closes the run's event log in the same step as its final status", async () => {
    const { store, events } = setup();
    await enqueue(store, "r", "T");
    const claimed = (await store.claim(10_000)).claimed;
    await events.append("r", [{ event: "metadata", data: "{}" }]);
    await store.finish("r", claimed!.attempt, "success", { data: '{"status":"success"}', keepSeconds: 60 });
    expect(await events.last("r")).toEqual({ id: 1, event: "__end__", data: '{"status":"success"}' });
    expect((await events.range("r", -1, 10)).map((e) => e.id)).toEqual([0, 1]);
    expect((await events.range("r", 0, 10)).map((e) => e.id)).toEqual([1]);
  });

  it("lets the records of runs on temporary threads expire with their log", async () => {
    const { prefix, store } = setup();
    await enqueue(store, "kept", "K");
    await enqueue(store, "temp", "T");
    const first = (await store.claim(10_000)).claimed;
    const second = (await store.claim(10_000)).claimed;
    for (const claimed of [first, second]) {
      const runId = claimed!.run.run_id;
      await store.finish(runId, claimed!.attempt, "success", { ...closing, temporary: runId === "temp" });
    }
    expect(await redis.ttl(`${prefix}run:temp`)).toBeGreaterThan(0);
    expect(await redis.ttl(`${prefix}run:kept`)).toBe(-1);
  });

  it("deletes runs that are not running", async () => {
    const { store } = setup();
    await enqueue(store, "running", "T");
    await enqueue(store, "pending", "T");
    await store.claim(10_000);
    expect(await store.delete("running")).toBe("running");
    expect(await store.delete("pending")).toBe("deleted");
    expect(await store.delete("pending")).toBe("missing");
    expect(await store.inflight("T")).toEqual([expect.objectContaining({ run_id: "running" })]);
  });
});
