import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { createRedisRunBackend, type RunBackend } from "../runs/queue/backend.ts";
import { createMemoryRunBackend } from "../runs/queue/memory-backend.ts";
import { newRun } from "../runs/queue/testing/contract.ts";
import { createMemoryStorage } from "../storage/memory.ts";
import { createRedisStorage } from "../storage/redis.ts";
import type { Storage } from "../storage/types.ts";
import { MemoryThreadStore } from "./memory-store.ts";
import { runQueuePrefix, threadKeys } from "./redis-index.ts";

/** Storage and a run queue wired as the server wires them (runs/module.ts). */
async function open(kind: "redis" | "memory"): Promise<{ storage: Storage; backend: RunBackend }> {
  if (kind === "memory") {
    const storage = createMemoryStorage();
    return { storage, backend: createMemoryRunBackend(storage.threads as MemoryThreadStore) };
  }
  const prefix = uniquePrefix("status");
  const storage = await createRedisStorage({ url: testRedisUrl(), prefix });
  const backend = await createRedisRunBackend({
    url: testRedisUrl(),
    prefix: runQueuePrefix(prefix),
    threadKey: threadKeys(prefix).record,
  });
  return { storage, backend };
}

const LEASE = 60_000;

/** Thread status is derived from the run queue in the step of every write, on both backends. */
describe.each(["redis", "memory"] as const)("thread status and the run queue (%s)", (kind) => {
  let storage: Storage;
  let backend: RunBackend;
  beforeEach(async () => {
    ({ storage, backend } = await open(kind));
  });
  afterEach(async () => {
    await backend.close();
    await storage.close();
  });

  const enqueue = (runId: string, threadId: string, claimLeaseMs?: number) =>
    backend.store.enqueue(newRun(runId, threadId), { startAt: Date.now(), rejectIfBusy: false, claimLeaseMs });

  it("busy while a run is pending or running, whatever a writer asks; the asked status once none is", async () => {
    const thread = await storage.threads.create({});
    await enqueue("r1", thread.thread_id);
    // A late cancel of an earlier run writes idle: the pending run keeps the thread busy.
    expect((await storage.threads.update(thread.thread_id, { status: "idle" }))?.status).toBe("busy");
    expect((await storage.threads.update(thread.thread_id, { metadata: { a: 1 } }))?.status).toBe("busy");
    const claimed = await backend.store.claim(LEASE);
    expect(claimed.claimed?.run.run_id).toBe("r1");
    expect((await storage.threads.update(thread.thread_id, { status: "error" }))?.status).toBe("busy");
    await backend.store.finish("r1", 1, "success", { data: "{}", keepSeconds: 60 });
    expect((await storage.threads.update(thread.thread_id, { status: "idle" }))?.status).toBe("idle");
    expect(
      (await storage.threads.search({ status: "busy", limit: 10, offset: 0, sort_by: "created_at", sort_order: "asc" }))
        .total,
    ).toBe(0);
  });

  it("a run's worker writes the thread only while it holds the lease, and its own run does not count", async () => {
    const thread = await storage.threads.create({});
    await enqueue("r1", thread.thread_id, LEASE);
    const fence = { runId: "r1", attempt: 1 };
    const written = await storage.threads.updateByRun(thread.thread_id, { status: "interrupted" }, fence);
    expect(written).toMatchObject({ status: "interrupted" });
    await enqueue("r2", thread.thread_id);
    expect(await storage.threads.updateByRun(thread.thread_id, { status: "idle" }, fence)).toMatchObject({
      status: "busy",
    });
    const stale = { runId: "r1", attempt: 2 };
    expect(await storage.threads.updateByRun(thread.thread_id, { values: { x: 1 } }, stale)).toBe("lease-lost");
    expect((await storage.threads.get(thread.thread_id))?.values).toBeNull();
    expect(await storage.threads.updateByRun("gone", {}, fence)).toBe("missing");
  });

  it("the TTL sweeper's conditional delete leaves a thread with a run in flight alone", async () => {
    const thread = await storage.threads.create({});
    await enqueue("r1", thread.thread_id);
    // Even when the record (as read) still says idle, as a stale read would.
    expect(await storage.threads.deleteIfUnchanged(thread)).toBe(false);
    expect(await storage.threads.get(thread.thread_id)).toBeDefined();
    await backend.store.cancel("r1", "rollback");
    expect(await storage.threads.deleteIfUnchanged(thread)).toBe(true);
  });

  it("the TTL sweeper's conditional prune mark fails once a run started since the thread was read", async () => {
    const thread = await storage.threads.create({});
    await enqueue("r1", thread.thread_id);
    expect(await storage.threads.updateIfUnchanged(thread, { ttl_applied: true })).toBeUndefined();
    await backend.store.cancel("r1", "rollback");
    expect(await storage.threads.updateIfUnchanged(thread, { ttl_applied: true })).toBeDefined();
  });

  it("a run is not enqueued on a thread deleted since the run was built", async () => {
    const thread = await storage.threads.create({});
    await storage.threads.delete(thread.thread_id);
    expect((await enqueue("r1", thread.thread_id, LEASE)).outcome).toBe("no-thread");
    expect(await backend.store.get("r1")).toBeUndefined();
  });
});
