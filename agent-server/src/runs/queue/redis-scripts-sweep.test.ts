import { describe } from "vitest";
import {
  BUSY_THREADS,
  connectScriptsRedis,
  endEvent,
  ended,
  LEASE,
  pending,
  r1Running,
  r1RunningR2Queued,
  redis,
  running,
  T0,
  table,
} from "./testing/scripts-table.ts";

/** Transition table of the run-queue scripts (see testing/scripts-table.ts): SWEEP (lease expiry). */

connectScriptsRedis();

describe("SWEEP (lease expiry)", () => {
  table([
    {
      name: "a lease not yet expired: nothing",
      given: r1Running,
      when: (q) => q.sweep(T0 + LEASE - 1),
      returns: [],
      then: {
        runs: { r1: running() },
        active: { T: "r1" },
        threadRuns: { T: ["r1"] },
        leases: { r1: T0 + LEASE },
        inflight: ["r1"],
      },
    },
    {
      name: "expired with attempts left: pending at the head of its queue, lock freed, the thread woken",
      given: r1RunningR2Queued,
      when: (q) => q.sweep(T0 + LEASE),
      returns: ["r1", "T", "pending", 1],
      then: {
        runs: { r1: pending({ attempt: 1, started_at: T0 }), r2: pending() },
        queues: { T: ["r1", "r2"] },
        threadRuns: { T: ["r1", "r2"] },
        ready: { T: T0 + LEASE },
        inflight: ["r1", "r2"],
      },
      published: [["wake", "T"]],
    },
    {
      name: "expired at the last attempt: error, out of inflight, the next run woken (the caller closes the log)",
      given: r1RunningR2Queued,
      when: (q) => q.sweep(T0 + LEASE, 1),
      returns: ["r1", "T", "error", 1],
      then: {
        runs: { r1: ended("error"), r2: pending() },
        queues: { T: ["r2"] },
        threadRuns: { T: ["r1", "r2"] },
        ready: { T: T0 + LEASE },
        inflight: ["r2"],
      },
      published: [["wake", "T"]],
    },
    {
      name: "expired while being cancelled: interrupted (not retried), the request cleared",
      given: async (q) => {
        await r1Running(q);
        await q.cancel("r1", "interrupt");
      },
      when: (q) => q.sweep(T0 + LEASE),
      returns: ["r1", "T", "interrupted", 1],
      then: {
        runs: { r1: ended("interrupted") },
        threadRuns: { T: ["r1"] },
      },
    },
    {
      name: "expired while being rolled back: deleted (the caller removes its checkpoints and record)",
      given: async (q) => {
        await r1Running(q);
        await q.cancel("r1", "rollback");
      },
      when: (q) => q.sweep(T0 + LEASE),
      returns: ["r1", "T", "deleted", 1],
      then: {
        runs: { r1: ended("interrupted") },
        threadRuns: { T: ["r1"] },
      },
    },
    {
      name: "a lease left for a run that is no longer running: dropped, nothing reported",
      given: async (q) => {
        await r1Running(q);
        await q.finish("r1", 1, "success");
        // Every script drops the lease of a run it stops; only a manual write leaves one behind.
        await redis.zAdd(`${q.prefix}leases`, { score: T0, value: "r1" });
      },
      when: (q) => q.sweep(T0 + LEASE),
      returns: [],
      then: {
        runs: { r1: ended("success") },
        threadRuns: { T: ["r1"] },
        events: { r1: [endEvent("success")] },
        expiring: ["ev:r1"],
      },
    },
    {
      name: "the thread's lock held by another run: requeued, the other's lock left alone",
      given: async (q) => {
        await r1Running(q);
        // Only a manual write can give the lock to another run while r1 runs.
        await redis.set(`${q.prefix}ta:T`, "other");
      },
      when: (q) => q.sweep(T0 + LEASE),
      returns: ["r1", "T", "pending", 1],
      then: {
        runs: { r1: pending({ attempt: 1, started_at: T0 }) },
        active: { T: "other" },
        queues: { T: ["r1"] },
        threadRuns: { T: ["r1"] },
        ready: { T: T0 + LEASE },
        inflight: ["r1"],
      },
      published: [["wake", "T"]],
    },
    {
      name: "at most 50 expired leases per call: the rest on the next",
      given: async (q) => {
        for (const thread of BUSY_THREADS) await q.enqueue(`${thread}-r`, thread, { leaseMs: LEASE });
        await q.enqueue("z1", "Z", { leaseMs: LEASE + 1 });
      },
      when: async (q) => [(await q.sweep(T0 + 2 * LEASE)) as unknown[], (await q.sweep(T0 + 2 * LEASE)) as unknown[]],
      returns: [BUSY_THREADS.flatMap((t) => [`${t}-r`, t, "pending", 1]), ["z1", "Z", "pending", 1]],
      then: {
        runs: {
          ...Object.fromEntries(BUSY_THREADS.map((t) => [`${t}-r`, pending({ attempt: 1, started_at: T0 })])),
          z1: pending({ attempt: 1, started_at: T0 }),
        },
        queues: { ...Object.fromEntries(BUSY_THREADS.map((t) => [t, [`${t}-r`]])), Z: ["z1"] },
        threadRuns: { ...Object.fromEntries(BUSY_THREADS.map((t) => [t, [`${t}-r`]])), Z: ["z1"] },
        ready: { ...Object.fromEntries(BUSY_THREADS.map((t) => [t, T0 + 2 * LEASE])), Z: T0 + 2 * LEASE },
        inflight: [...BUSY_THREADS.map((t) => `${t}-r`), "z1"],
      },
      published: [...BUSY_THREADS, "Z"].map((t): [string, string] => ["wake", t]),
    },
  ]);
});
