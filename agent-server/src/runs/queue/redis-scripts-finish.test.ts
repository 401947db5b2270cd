import { describe } from "vitest";
import {
  connectScriptsRedis,
  endEvent,
  ended,
  LEASE,
  pending,
  r1Reclaimed,
  r1ReclaimedState,
  r1Running,
  r1RunningR2Queued,
  running,
  T0,
  table,
} from "./testing/scripts-table.ts";

/** Transition table of the run-queue scripts (see testing/scripts-table.ts): FINISH and CANCEL. */

connectScriptsRedis();

describe("FINISH", () => {
  table([
    {
      name: "success by the holder: final status, lock and lease freed, log closed and its end published; nothing queued, no wake",
      given: r1Running,
      when: (q) => q.finish("r1", 1, "success"),
      // Kept with a final status: its thread and how many of its runs are not archived.
      returns: [1, "T", 1],
      then: {
        runs: { r1: ended("success") },
        threadRuns: { T: ["r1"] },
        events: { r1: [endEvent("success")] },
        expiring: ["ev:r1"],
      },
      published: [["ev:r1", "end"]],
    },
    {
      name: "with a run queued behind: the thread ready again at now, a wake published",
      given: r1RunningR2Queued,
      when: (q) => q.finish("r1", 1, "error", { now: T0 + 100 }),
      returns: [1, "T", 2],
      then: {
        runs: { r1: ended("error"), r2: pending() },
        queues: { T: ["r2"] },
        threadRuns: { T: ["r1", "r2"] },
        ready: { T: T0 + 100 },
        inflight: ["r2"],
        events: { r1: [endEvent("error")] },
        expiring: ["ev:r1"],
      },
      published: [
        ["ev:r1", "end"],
        ["wake", "T"],
      ],
    },
    {
      name: "interrupted after a cancel request: the request cleared",
      given: async (q) => {
        await r1Running(q);
        await q.cancel("r1", "interrupt");
      },
      when: (q) => q.finish("r1", 1, "interrupted"),
      returns: [1, "T", 1],
      then: {
        runs: { r1: ended("interrupted") },
        threadRuns: { T: ["r1"] },
        events: { r1: [endEvent("interrupted")] },
        expiring: ["ev:r1"],
      },
      published: [["ev:r1", "end"]],
    },
    {
      name: "deleted (rolled back): record and thread entry removed, the log closed",
      given: async (q) => {
        await r1RunningR2Queued(q);
        await q.cancel("r1", "rollback");
      },
      when: (q) => q.finish("r1", 1, "deleted"),
      returns: 1,
      then: {
        runs: { r2: pending() },
        queues: { T: ["r2"] },
        threadRuns: { T: ["r2"] },
        ready: { T: T0 },
        inflight: ["r2"],
        events: { r1: [endEvent("deleted")] },
        expiring: ["ev:r1"],
      },
      published: [
        ["ev:r1", "end"],
        ["wake", "T"],
      ],
    },
    {
      name: "a run of a temporary thread: its record and the thread's run index expire with the log",
      given: r1Running,
      when: (q) => q.finish("r1", 1, "success", { temporary: true }),
      returns: 1,
      then: {
        runs: { r1: ended("success") },
        threadRuns: { T: ["r1"] },
        events: { r1: [endEvent("success")] },
        expiring: ["ev:r1", "run:r1", "tr:T"],
      },
      published: [["ev:r1", "end"]],
    },
    {
      name: "requeue (shutdown): pending at the head of its queue, the attempt not counted, no log entry, woken",
      given: r1RunningR2Queued,
      when: (q) => q.requeue("r1", 1, T0 + 100),
      returns: 1,
      then: {
        runs: { r1: pending({ started_at: T0 }), r2: pending() },
        queues: { T: ["r1", "r2"] },
        threadRuns: { T: ["r1", "r2"] },
        ready: { T: T0 + 100 },
        inflight: ["r1", "r2"],
      },
      published: [["wake", "T"]],
    },
    {
      name: "a stale attempt: lease lost (0), nothing changes",
      given: r1Reclaimed,
      when: (q) => q.finish("r1", 1, "success"),
      returns: 0,
      then: r1ReclaimedState,
    },
    {
      name: "a requeue with a stale attempt: lease lost (0), nothing changes",
      given: r1Reclaimed,
      when: (q) => q.requeue("r1", 1),
      returns: 0,
      then: r1ReclaimedState,
    },
    {
      name: "already finished (the lock is gone): 0, nothing changes",
      given: async (q) => {
        await r1Running(q);
        await q.finish("r1", 1, "success");
      },
      when: (q) => q.finish("r1", 1, "error"),
      returns: 0,
      then: {
        runs: { r1: ended("success") },
        threadRuns: { T: ["r1"] },
        events: { r1: [endEvent("success")] },
        expiring: ["ev:r1"],
      },
    },
    {
      name: "an unknown run: 0",
      when: (q) => q.finish("r1", 1, "success"),
      returns: 0,
      then: {},
    },
  ]);
});

describe("CANCEL", () => {
  table([
    {
      name: "an unknown run: missing",
      when: (q) => q.cancel("r1", "interrupt"),
      returns: "missing",
      then: {},
    },
    {
      name: "a pending run, interrupt: out of its queue and inflight, interrupted (the thread stays in ready until a claim drops it)",
      given: async (q) => {
        await r1RunningR2Queued(q);
        await q.enqueue("r3", "T");
      },
      when: (q) => q.cancel("r2", "interrupt"),
      returns: "cancelled",
      then: {
        runs: { r1: running(), r2: pending({ status: "interrupted" }), r3: pending() },
        active: { T: "r1" },
        queues: { T: ["r3"] },
        threadRuns: { T: ["r1", "r2", "r3"] },
        ready: { T: T0 },
        leases: { r1: T0 + LEASE },
        inflight: ["r1", "r3"],
      },
    },
    {
      name: "a pending run, rollback: its record and thread entry deleted",
      given: (q) => q.enqueue("r1", "T"),
      when: (q) => q.cancel("r1", "rollback"),
      returns: "cancelled",
      then: { ready: { T: T0 } },
    },
    {
      name: "a running run: the request stored for the lease holder and published",
      given: r1Running,
      when: (q) => q.cancel("r1", "interrupt"),
      returns: "signalled",
      then: {
        runs: { r1: running({ cancel: "interrupt" }) },
        active: { T: "r1" },
        threadRuns: { T: ["r1"] },
        leases: { r1: T0 + LEASE },
        inflight: ["r1"],
      },
      published: [["cancel", "r1 interrupt"]],
    },
    {
      name: "a finished run: finished, nothing changes",
      given: async (q) => {
        await r1Running(q);
        await q.finish("r1", 1, "success");
      },
      when: (q) => q.cancel("r1", "rollback"),
      returns: "finished",
      then: {
        runs: { r1: ended("success") },
        threadRuns: { T: ["r1"] },
        events: { r1: [endEvent("success")] },
        expiring: ["ev:r1"],
      },
    },
  ]);
});
