import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { connectRedis, type RedisClient } from "../storage/redis-client.ts";
import { RedisCronStore } from "./redis-store.ts";
import type { Cron } from "./schemas.ts";

const cron = (id: number, next: string | null): Cron => ({
  cron_id: `00000000-0000-4000-8000-${String(id).padStart(12, "0")}`,
  assistant_id: "a",
  thread_id: null,
  on_run_completed: "delete",
  end_time: null,
  schedule: "* * * * *",
  timezone: null,
  created_at: "2026-01-01T00:00:00.000Z",
  updated_at: "2026-01-01T00:00:00.000Z",
  payload: {},
  user_id: null,
  next_run_date: next,
  metadata: {},
  enabled: true,
});

describe("RedisCronStore claims", () => {
  const clients: RedisClient[] = [];
  let stores: RedisCronStore[];
  let prefix: string;

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) clients.push(await connectRedis(testRedisUrl()));
  });
  // three processes' stores on one private prefix per test
  beforeEach(() => {
    prefix = uniquePrefix("cron-store");
    stores = clients.map((client) => new RedisCronStore(client, prefix));
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
  });

  const lease = (owner: string, now: number, ms = 10_000) => ({ owner, now, until: now + ms });

  it("an update racing a delete never brings the cron back (the PATCH answers 404 instead)", async () => {
    const slot = "2026-01-01T00:01:00.000Z";
    for (let round = 0; round < 50; round++) {
      const item = cron(1000 + round, slot);
      await stores[0]?.save(item);
      const [updated] = await Promise.all([
        stores[1]?.update({ ...item, metadata: { round } }),
        stores[2]?.delete(item.cron_id),
      ]);
      const stored = await stores[0]?.get(item.cron_id);
      // Either the update came first and the delete removed it, or the update found nothing.
      expect(stored).toBeUndefined();
      expect(typeof updated).toBe("boolean");
    }
    expect(await stores[0]?.due(Date.parse(slot), 100)).toEqual([]);
    expect(await stores[0]?.all()).toEqual([]);
    const kept = cron(2000, slot);
    await stores[0]?.save(kept);
    expect(await stores[1]?.update({ ...kept, metadata: { patched: true } })).toBe(true);
    expect((await stores[2]?.get(kept.cron_id))?.metadata).toEqual({ patched: true });
  });

  it("lets exactly one of several concurrent schedulers claim each due slot, and moves it on at the ack", async () => {
    const slot = Date.parse("2026-01-01T00:01:00.000Z");
    const crons = Array.from({ length: 60 }, (_, i) => cron(i, new Date(slot).toISOString()));
    for (const item of crons) await stores[0]?.save(item);
    const due = await stores[1]?.due(slot, 100);
    expect(due).toHaveLength(60);
    const results = await Promise.all(
      crons.flatMap((item) => stores.map((store, i) => store.claim(item.cron_id, slot, lease(`p${i}`, slot)))),
    );
    for (let i = 0; i < crons.length; i++) {
      expect(results.slice(i * stores.length, (i + 1) * stores.length).filter(Boolean)).toHaveLength(1);
    }
    // in flight: not due while the lease holds, next_run_date still names the slot
    expect(await stores[2]?.due(slot + 9_999, 100)).toEqual([]);
    const first = crons[0]?.cron_id as string;
    expect((await stores[0]?.get(first))?.next_run_date).toBe("2026-01-01T00:01:00.000Z");
    const acks = await Promise.all(crons.map((item) => stores[1]?.ack(item.cron_id, slot, slot + 60_000)));
    expect(acks.every(Boolean)).toBe(true);
    expect(await stores[2]?.ack(first, slot, slot + 60_000)).toBe(false);
    expect(await stores[2]?.due(slot + 59_999, 100)).toEqual([]);
    expect(await stores[2]?.due(slot + 60_000, 100)).toHaveLength(60);
    expect((await stores[0]?.get(first))?.next_run_date).toBe("2026-01-01T00:02:00.000Z");
  });

  it("hands a slot whose claim was never acknowledged to exactly one other process once the lease ends", async () => {
    const slot = Date.parse("2026-03-01T00:00:00.000Z");
    const item = cron(200, new Date(slot).toISOString());
    await stores[0]?.save(item);
    expect(await stores[0]?.claim(item.cron_id, slot, lease("dead", slot, 5_000))).toBe(true);
    // the owner dies here; while its lease holds nobody else may take the slot
    expect(await stores[1]?.claim(item.cron_id, slot, lease("p1", slot + 4_999))).toBe(false);
    expect(await stores[1]?.due(slot + 4_999, 100)).toEqual([]);
    expect(await stores[1]?.due(slot + 5_000, 100)).toEqual([{ cronId: item.cron_id, slot }]);
    const takeovers = await Promise.all(
      [1, 2].map((i) => stores[i]?.claim(item.cron_id, slot, lease(`p${i}`, slot + 5_000))),
    );
    expect(takeovers.filter(Boolean)).toHaveLength(1);
    expect(await stores[1]?.due(slot + 5_001, 100)).toEqual([]);
    expect(await clients[0]?.hGet(`${prefix}cron:${item.cron_id}`, "claim_owner")).toMatch(/^p[12]$/);
    // a late ack by the first owner and the new owner's ack: the first one wins, the slot fires once
    expect(await stores[0]?.ack(item.cron_id, slot, slot + 60_000)).toBe(true);
    expect(await stores[1]?.ack(item.cron_id, slot, slot + 60_000)).toBe(false);
    expect(await stores[1]?.claim(item.cron_id, slot, lease("p1", slot + 60_000))).toBe(false);
    expect(await stores[1]?.due(slot + 60_000, 100)).toEqual([{ cronId: item.cron_id, slot: slot + 60_000 }]);
    expect(await clients[0]?.hGet(`${prefix}cron:${item.cron_id}`, "claim_owner")).toBeNull();
  });

  it("refuses stale claims and claims of deleted crons; a save or delete drops the slot in flight", async () => {
    const slot = Date.parse("2026-02-01T00:00:00.000Z");
    const [a, b, c] = [300, 301, 302].map((id) => cron(id, new Date(slot).toISOString())) as [Cron, Cron, Cron];
    for (const item of [a, b, c]) await stores[0]?.save(item);
    expect(await stores[0]?.claim(a.cron_id, slot - 1, lease("p0", slot))).toBe(false);
    expect(await stores[0]?.claim(a.cron_id, slot, lease("p0", slot))).toBe(true);
    expect(await stores[0]?.ack(a.cron_id, slot, null)).toBe(true);
    expect((await stores[0]?.get(a.cron_id))?.next_run_date).toBeNull();
    expect(await stores[0]?.delete(b.cron_id)).toBe(true);
    expect(await stores[0]?.claim(b.cron_id, slot, lease("p0", slot))).toBe(false);
    expect((await stores[0]?.due(slot, 100))?.map((entry) => entry.cronId)).not.toContain(b.cron_id);

    expect(await stores[0]?.claim(c.cron_id, slot, lease("p0", slot, 1_000))).toBe(true);
    await stores[1]?.save({ ...c, next_run_date: new Date(slot + 3_600_000).toISOString() });
    expect(await stores[0]?.ack(c.cron_id, slot, slot + 60_000)).toBe(false);
    expect(await stores[0]?.due(slot + 1_000, 100)).toEqual([]);
    expect((await stores[0]?.get(c.cron_id))?.next_run_date).toBe(new Date(slot + 3_600_000).toISOString());
    expect(await stores[0]?.claim(c.cron_id, slot + 3_600_000, lease("p0", slot + 3_600_000, 1_000))).toBe(true);
    expect(await stores[0]?.delete(c.cron_id)).toBe(true);
    expect(await stores[0]?.due(slot + 3_700_000, 100)).toEqual([]);
  });
});
