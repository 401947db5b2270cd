import { describe } from "vitest";
import {
  BUSY_THREADS,
  connectScriptsRedis,
  endEvent,
  ended,
  json,
  LEASE,
  pending,
  r1Reclaimed,
  r1ReclaimedState,
  r1Running,
  redis,
  running,
  T0,
  table,
} from "./testing/scripts-table.ts";

/** Transition table of the run-queue scripts (see testing/scripts-table.ts): CLAIM and RENEW. */

connectScriptsRedis();

describe("CLAIM", () => {
  table([
    {
      name: "nothing queued: nothing, and no next due time",
      when: (q) => q.claim(),
      returns: [null, null],
      then: {},
    },
    {
      name: "only a delayed run: nothing, and when it is due",
      given: (q) => q.enqueue("r1", "T", { startAt: T0 + 5000 }),
      when: (q) => q.claim(),
      returns: [null, String(T0 + 5000)],
      then: {
        runs: { r1: pending({ start_at: T0 + 5000 }) },
        queues: { T: ["r1"] },
        threadRuns: { T: ["r1"] },
        ready: { T: T0 + 5000 },
        inflight: ["r1"],
      },
    },
    {
      name: "a due run: popped, its thread locked, running under a lease, first start recorded, the next due time told",
      given: async (q) => {
        await q.enqueue("a1", "A");
        await q.enqueue("b1", "B", { startAt: T0 + 5000 });
      },
      when: (q) => q.claim(T0 + 10),
      returns: ["a1", 1, json("a1"), String(T0 + 10), 0, String(T0 + 5000)],
      then: {
        runs: { a1: running({ started_at: T0 + 10 }), b1: pending({ start_at: T0 + 5000 }) },
        active: { A: "a1" },
        queues: { B: ["b1"] },
        threadRuns: { A: ["a1"], B: ["b1"] },
        ready: { B: T0 + 5000 },
        leases: { a1: T0 + 10 + LEASE },
        inflight: ["a1", "b1"],
      },
    },
    {
      name: "the thread's next run waits for the lock: the thread leaves ready until finishing wakes it",
      given: async (q) => {
        await q.enqueue("r1", "T");
        await q.enqueue("r2", "T");
      },
      when: (q) => q.claim(),
      returns: ["r1", 1, json("r1"), String(T0), 0, null],
      then: {
        runs: { r1: running(), r2: pending() },
        active: { T: "r1" },
        queues: { T: ["r2"] },
        threadRuns: { T: ["r1", "r2"] },
        leases: { r1: T0 + LEASE },
        inflight: ["r1", "r2"],
      },
    },
    {
      name: "a run whose lease expired: attempt 2, resumed, its first start kept",
      given: async (q) => {
        await r1Running(q);
        await q.sweep(T0 + LEASE);
      },
      when: (q) => q.claim(T0 + 2000),
      returns: ["r1", 2, json("r1"), String(T0), 1, null],
      then: r1ReclaimedState,
    },
    {
      name: "a run handed back at shutdown: attempt 1 again, resumed",
      given: async (q) => {
        await r1Running(q);
        await q.requeue("r1", 1);
      },
      when: (q) => q.claim(T0 + 2000),
      returns: ["r1", 1, json("r1"), String(T0), 1, null],
      then: {
        runs: { r1: running() },
        active: { T: "r1" },
        threadRuns: { T: ["r1"] },
        leases: { r1: T0 + 2000 + LEASE },
        inflight: ["r1"],
      },
    },
    {
      name: "a thread woken with a delayed head: rescored to the head's due time, nothing claimed",
      given: async (q) => {
        await r1Running(q);
        await q.enqueue("r2", "T", { startAt: T0 + 5000 });
        // Finishing r1 wakes the thread at its finish time, before r2 is due.
        await q.finish("r1", 1, "success", { now: T0 + 100 });
      },
      when: (q) => q.claim(T0 + 200),
      returns: [null, String(T0 + 5000)],
      then: {
        runs: { r1: ended("success"), r2: pending({ start_at: T0 + 5000 }) },
        queues: { T: ["r2"] },
        threadRuns: { T: ["r1", "r2"] },
        ready: { T: T0 + 5000 },
        inflight: ["r2"],
        events: { r1: [endEvent("success")] },
        expiring: ["ev:r1"],
      },
    },
    {
      name: "a due thread that is busy: dropped from ready, the next due thread claimed",
      given: async (q) => {
        await q.enqueue("a1", "A", { leaseMs: LEASE });
        await q.enqueue("a2", "A");
        await q.enqueue("b1", "B", { startAt: T0 + 1 });
      },
      when: (q) => q.claim(T0 + 10),
      returns: ["b1", 1, json("b1"), String(T0 + 10), 0, null],
      then: {
        runs: { a1: running(), a2: pending(), b1: running({ start_at: T0 + 1, started_at: T0 + 10 }) },
        active: { A: "a1", B: "b1" },
        queues: { A: ["a2"] },
        threadRuns: { A: ["a1", "a2"], B: ["b1"] },
        leases: { a1: T0 + LEASE, b1: T0 + 10 + LEASE },
        inflight: ["a1", "a2", "b1"],
      },
    },
    {
      name: "a ready thread whose queue emptied (its run was cancelled): dropped from ready",
      given: async (q) => {
        await q.enqueue("r1", "T");
        await q.cancel("r1", "interrupt");
      },
      when: (q) => q.claim(),
      returns: [null, null],
      then: {
        runs: { r1: pending({ status: "interrupted" }) },
        threadRuns: { T: ["r1"] },
      },
    },
    {
      name: "a queued id whose record is gone: popped and skipped, the run behind it claimed",
      given: async (q) => {
        await q.enqueue("r1", "T");
        await q.enqueue("r2", "T");
        // No script leaves a queued id without its record; eviction or a manual deletion can.
        await redis.del(`${q.prefix}run:r1`);
      },
      when: (q) => q.claim(),
      returns: ["r2", 1, json("r2"), String(T0), 0, null],
      then: {
        runs: { r2: running() },
        active: { T: "r2" },
        threadRuns: { T: ["r1", "r2"] },
        leases: { r2: T0 + LEASE },
        inflight: ["r1", "r2"],
      },
    },
    {
      name: "50 due threads that cannot be claimed: dropped, and 'try again now' instead of a long scan",
      given: async (q) => {
        for (const thread of BUSY_THREADS) {
          await q.enqueue(`${thread}-running`, thread, { leaseMs: LEASE });
          await q.enqueue(`${thread}-queued`, thread);
        }
        await q.enqueue("z1", "Z", { startAt: T0 + 1 });
      },
      when: async (q) => [await q.claim(T0 + 10), await q.claim(T0 + 10)],
      returns: [
        [null, T0 + 10],
        ["z1", 1, json("z1"), String(T0 + 10), 0, null],
      ],
      then: {
        runs: {
          ...Object.fromEntries(
            BUSY_THREADS.flatMap((t) => [
              [`${t}-running`, running()],
              [`${t}-queued`, pending()],
            ]),
          ),
          z1: running({ start_at: T0 + 1, started_at: T0 + 10 }),
        },
        active: { ...Object.fromEntries(BUSY_THREADS.map((t) => [t, `${t}-running`])), Z: "z1" },
        queues: Object.fromEntries(BUSY_THREADS.map((t) => [t, [`${t}-queued`]])),
        threadRuns: {
          ...Object.fromEntries(BUSY_THREADS.map((t) => [t, [`${t}-running`, `${t}-queued`]])),
          Z: ["z1"],
        },
        leases: { ...Object.fromEntries(BUSY_THREADS.map((t) => [`${t}-running`, T0 + LEASE])), z1: T0 + 10 + LEASE },
        inflight: [...BUSY_THREADS.flatMap((t) => [`${t}-running`, `${t}-queued`]), "z1"],
      },
    },
  ]);
});

describe("RENEW", () => {
  table([
    {
      name: "the holder: lease extended, no cancel request",
      given: r1Running,
      when: (q) => q.renew("r1", 1, T0 + 9000),
      returns: "",
      then: {
        runs: { r1: running() },
        active: { T: "r1" },
        threadRuns: { T: ["r1"] },
        leases: { r1: T0 + 9000 },
        inflight: ["r1"],
      },
    },
    {
      name: "the holder of a run being cancelled: lease extended, the cancel action",
      given: async (q) => {
        await r1Running(q);
        await q.cancel("r1", "rollback");
      },
      when: (q) => q.renew("r1", 1, T0 + 9000),
      returns: "rollback",
      then: {
        runs: { r1: running({ cancel: "rollback" }) },
        active: { T: "r1" },
        threadRuns: { T: ["r1"] },
        leases: { r1: T0 + 9000 },
        inflight: ["r1"],
      },
    },
    {
      name: "a stale attempt (the run was taken over): lost, the new holder's lease untouched",
      given: r1Reclaimed,
      when: (q) => q.renew("r1", 1, T0 + 9000),
      returns: null,
      then: r1ReclaimedState,
    },
    {
      name: "the run was handed back by the sweep (same attempt, lock freed): lost, no lease added",
      given: async (q) => {
        await r1Running(q);
        await q.sweep(T0 + LEASE);
      },
      when: (q) => q.renew("r1", 1, T0 + 9000),
      returns: null,
      then: {
        runs: { r1: pending({ attempt: 1, started_at: T0 }) },
        queues: { T: ["r1"] },
        threadRuns: { T: ["r1"] },
        ready: { T: T0 + LEASE },
        inflight: ["r1"],
      },
    },
    {
      name: "an unknown run: lost",
      when: (q) => q.renew("r1", 1, T0 + 9000),
      returns: null,
      then: {},
    },
  ]);
});
