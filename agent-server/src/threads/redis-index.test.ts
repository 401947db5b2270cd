import { describe, expect, it } from "vitest";
import type { Thread } from "../storage/types.ts";
import { indexOps, isIndexedMetadataValue, threadKeys } from "./redis-index.ts";

const keys = threadKeys("p:");
const thread: Thread = {
  thread_id: "01900000-0000-7000-8000-000000000001",
  created_at: "2026-01-01T00:00:00.000Z",
  updated_at: "2026-01-01T00:00:00.000Z",
  state_updated_at: "2026-01-01T00:00:00.000Z",
  metadata: { user: "u1", nested: { a: 1 }, n: 2 },
  status: "idle",
  config: {},
  values: null,
  interrupts: {},
};
const created = Date.parse(thread.created_at);

describe("thread index entries", () => {
  it("indexes every sort order, per status too, and top-level scalar metadata by creation time", () => {
    expect(isIndexedMetadataValue("x")).toBe(true);
    expect(isIndexedMetadataValue(null)).toBe(true);
    expect(isIndexedMetadataValue({ a: 1 })).toBe(false);
    expect(isIndexedMetadataValue("x".repeat(300))).toBe(false);
    const ops = indexOps(keys, undefined, thread);
    expect(ops).toHaveLength(12);
    expect(ops).toContainEqual({ key: "p:threads:status:idle:updated_at", op: "zadd", score: created });
    expect(ops).toContainEqual({ key: "p:threads:sort:status", op: "zadd", score: 2 });
    expect(ops.filter((op) => op.key.includes(":meta:"))).toEqual([
      { key: 'p:threads:meta:["user","u1"]', op: "zadd", score: created },
      { key: 'p:threads:meta:["n",2]', op: "zadd", score: created },
    ]);
  });

  it("writes only the entries that change", () => {
    const updatedAt = "2026-01-01T00:00:01.000Z";
    const later = { ...thread, updated_at: updatedAt, metadata: { ...thread.metadata, user: "u2" } };
    expect(indexOps(keys, thread, later)).toEqual([
      { key: 'p:threads:meta:["user","u1"]', op: "zrem" },
      { key: "p:threads:sort:updated_at", op: "zadd", score: Date.parse(updatedAt) },
      { key: "p:threads:status:idle:updated_at", op: "zadd", score: Date.parse(updatedAt) },
      { key: 'p:threads:meta:["user","u2"]', op: "zadd", score: created },
    ]);
    const busy = indexOps(keys, thread, { ...thread, status: "busy" });
    expect(busy.filter((op) => op.op === "zrem").map((op) => op.key)).toHaveLength(5);
    expect(busy.filter((op) => op.op === "zadd").map((op) => op.key)).toContain("p:threads:status:busy:created_at");
    expect(indexOps(keys, thread, undefined).every((op) => op.op === "zrem")).toBe(true);
  });
});
