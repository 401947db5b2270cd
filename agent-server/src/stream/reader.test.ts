import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { createMemoryRunBackend } from "../runs/queue/memory-backend.ts";
import type { RedisClient } from "../storage/redis-client.ts";
import { END_EVENT, type LoggedEvent, type NewEvent, RedisRunEventLog, type RunEventLog } from "./event-log.ts";
import { EVENTS_DROPPED, readRunEvents } from "./reader.ts";

/** Every event of a run's log from after `afterId`, up to its closing entry. */
async function readAll(log: RunEventLog, runId: string, afterId: number): Promise<LoggedEvent[]> {
  const read: LoggedEvent[] = [];
  const signal = AbortSignal.timeout(10_000);
  for await (const item of readRunEvents(log, runId, {
    afterId,
    signal,
    heartbeatMs: 1000,
    isOver: async () => true,
  })) {
    if (!("heartbeat" in item)) read.push(item);
  }
  return read;
}

/** `count` events appended ten at a time, as a worker's writer batches them. */
async function emit(log: RunEventLog, runId: string, count: number): Promise<void> {
  for (let start = 0; start < count; start += 10) {
    const batch: NewEvent[] = [];
    for (let i = start; i < Math.min(start + 10, count); i++) batch.push({ event: "custom", data: String(i) });
    await log.append(runId, batch);
  }
}

const CAP = 100;

describe.each([
  ["Redis", "redis"],
  ["in-memory", "memory"],
] as const)("a capped run event log (%s)", (_name, kind) => {
  let redis: RedisClientType;
  let subscriber: RedisClientType;
  let log: RunEventLog;
  let prefix: string;

  beforeAll(async () => {
    prefix = uniquePrefix("capped");
    redis = await connectTestRedis();
    subscriber = createClient({ url: testRedisUrl() });
    await subscriber.connect();
    log =
      kind === "redis"
        ? new RedisRunEventLog(redis as unknown as RedisClient, subscriber as unknown as RedisClient, prefix, CAP)
        : createMemoryRunBackend(undefined, CAP).events;
  });
  afterAll(async () => {
    await subscriber.quit();
    await redis.quit();
  });

  it("keeps about the cap of the latest entries of a run that emits ten times more", async () => {
    await log.append("long", [{ event: "metadata", data: "{}" }]);
    await emit(log, "long", 1000);
    await log.append("long", [{ event: END_EVENT, data: "{}" }], 3600);
    const kept = await log.range("long", -1, 10_000);
    // `MAXLEN ~` trims whole stream nodes (100 entries): at most one node more than the cap.
    expect(kept.length).toBeGreaterThanOrEqual(CAP);
    expect(kept.length).toBeLessThanOrEqual(2 * CAP);
    expect(kept.at(-1)).toMatchObject({ id: 1001, event: END_EVENT });
    expect(kept.map(({ id }) => id)).toEqual(kept.map((_, i) => 1002 - kept.length + i));
    if (kind === "redis") {
      expect(await redis.xLen(`${prefix}ev:long`)).toBe(kept.length);
      const ttl = await redis.ttl(`${prefix}ev:long`);
      expect(ttl).toBeGreaterThan(3500);
      expect(ttl).toBeLessThanOrEqual(3600);
    }
  });

  it("tells a reader from the start that events were dropped, then reads on from the oldest kept", async () => {
    const first = (await log.range("long", -1, 1))[0] as LoggedEvent;
    const read = await readAll(log, "long", -1);
    expect(read[0]).toMatchObject({ id: first.id - 1, event: "error" });
    const error = JSON.parse(read[0]?.data ?? "") as { error: string; message: string };
    expect(error.error).toBe(EVENTS_DROPPED);
    expect(error.message).toContain(`Events 0 to ${first.id - 1}`);
    expect(read.slice(1).map(({ id }) => id)).toEqual(Array.from({ length: 1002 - first.id }, (_, i) => first.id + i));
    expect(read.at(-1)?.event).toBe(END_EVENT);
    // Resuming from the error's id, or from any kept event, reads on without another one.
    const resumed = await readAll(log, "long", first.id - 1);
    expect(resumed[0]).toEqual(first);
    expect(resumed.filter(({ event }) => event === "error")).toEqual([]);
  });

  it("does not report the failed attempt a retried one replaced as dropped", async () => {
    await log.append("retried", [{ event: "metadata", data: '{"attempt":1}' }]);
    await emit(log, "retried", 20);
    await log.startAttempt("retried", { event: "metadata", data: '{"attempt":2}' });
    await emit(log, "retried", 5);
    await log.append("retried", [{ event: END_EVENT, data: "{}" }], 3600);
    for (const afterId of [-1, 7]) {
      const read = await readAll(log, "retried", afterId);
      expect(read.map(({ event }) => event)).toEqual(["metadata", ...Array(5).fill("custom"), END_EVENT]);
      expect(read[0]?.id).toBe(21);
    }
  });
});
