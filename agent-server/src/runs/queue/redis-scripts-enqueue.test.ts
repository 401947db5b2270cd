import { describe } from "vitest";
import {
  connectScriptsRedis,
  endEvent,
  ended,
  LEASE,
  pending,
  r1Running,
  r1RunningR2Queued,
  running,
  T0,
  table,
} from "./testing/scripts-table.ts";

/** Transition table of the run-queue scripts (see testing/scripts-table.ts): ENQUEUE, and the multitask strategies composed from it. */

connectScriptsRedis();

describe("ENQUEUE", () => {
  table([
    {
      name: "idle thread: queued, the thread ready at the run's due time, a wake published",
      when: (q) => q.enqueue("r1", "T"),
      returns: 1,
      then: {
        runs: { r1: pending() },
        queues: { T: ["r1"] },
        threadRuns: { T: ["r1"] },
        ready: { T: T0 },
        inflight: ["r1"],
      },
      published: [["wake", "T"]],
    },
    {
      name: "delayed run on an idle thread: ready at its due time",
      when: (q) => q.enqueue("r1", "T", { startAt: T0 + 5000 }),
      returns: 1,
      then: {
        runs: { r1: pending({ start_at: T0 + 5000 }) },
        queues: { T: ["r1"] },
        threadRuns: { T: ["r1"] },
        ready: { T: T0 + 5000 },
        inflight: ["r1"],
      },
      published: [["wake", "T"]],
    },
    {
      name: "behind a queued run: appended, the thread keeps its head's due time (FIFO even when the new run is due first)",
      given: (q) => q.enqueue("r1", "T", { startAt: T0 + 5000 }),
      when: (q) => q.enqueue("r2", "T"),
      returns: 1,
      then: {
        runs: { r1: pending({ start_at: T0 + 5000 }), r2: pending() },
        queues: { T: ["r1", "r2"] },
        threadRuns: { T: ["r1", "r2"] },
        ready: { T: T0 + 5000 },
        inflight: ["r1", "r2"],
      },
      published: [["wake", "T"]],
    },
    {
      name: "thread running a run, a lease asked: queued, not claimed",
      given: r1Running,
      when: (q) => q.enqueue("r2", "T", { leaseMs: LEASE }),
      returns: 1,
      then: {
        runs: { r1: running(), r2: pending() },
        active: { T: "r1" },
        queues: { T: ["r2"] },
        threadRuns: { T: ["r1", "r2"] },
        ready: { T: T0 },
        leases: { r1: T0 + LEASE },
        inflight: ["r1", "r2"],
      },
      published: [["wake", "T"]],
    },
    {
      name: "idle thread, a lease asked: claimed at once (running, attempt 1, locked, leased), not queued, no wake",
      when: (q) => q.enqueue("r1", "T", { leaseMs: LEASE }),
      returns: 3,
      then: {
        runs: { r1: running() },
        active: { T: "r1" },
        threadRuns: { T: ["r1"] },
        leases: { r1: T0 + LEASE },
        inflight: ["r1"],
      },
    },
    {
      name: "existing id: left as it is, even with a lease asked and the thread idle",
      given: async (q) => {
        await r1Running(q);
        await q.finish("r1", 1, "success");
      },
      when: (q) => q.enqueue("r1", "T", { leaseMs: LEASE, reject: true }),
      returns: 2,
      then: {
        runs: { r1: ended("success") },
        threadRuns: { T: ["r1"] },
        events: { r1: [endEvent("success")] },
        expiring: ["ev:r1"],
      },
    },
    {
      name: "the thread's record is gone (deleted since the run was built): 4, nothing stored",
      when: (q) => q.enqueue("r1", "T", { leaseMs: LEASE, threadKey: `${q.prefix}thread:T` }),
      returns: 4,
      then: {},
    },
    {
      name: "existing id, given for another thread: left as it is",
      given: (q) => q.enqueue("r1", "T"),
      when: (q) => q.enqueue("r1", "U"),
      returns: 2,
      then: {
        runs: { r1: pending() },
        queues: { T: ["r1"] },
        threadRuns: { T: ["r1"] },
        ready: { T: T0 },
        inflight: ["r1"],
      },
    },
  ]);
});

describe("multitask strategies, as RunService composes them from ENQUEUE and CANCEL", () => {
  const given = r1RunningR2Queued;
  table([
    {
      name: "reject, thread running: nothing stored (0)",
      given: r1Running,
      when: (q) => q.enqueue("r3", "T", { reject: true }),
      returns: 0,
      then: {
        runs: { r1: running() },
        active: { T: "r1" },
        threadRuns: { T: ["r1"] },
        leases: { r1: T0 + LEASE },
        inflight: ["r1"],
      },
    },
    {
      name: "reject, a run queued and none running: nothing stored (0)",
      given: (q) => q.enqueue("r1", "T", { startAt: T0 + 5000 }),
      when: (q) => q.enqueue("r2", "T", { reject: true }),
      returns: 0,
      then: {
        runs: { r1: pending({ start_at: T0 + 5000 }) },
        queues: { T: ["r1"] },
        threadRuns: { T: ["r1"] },
        ready: { T: T0 + 5000 },
        inflight: ["r1"],
      },
    },
    {
      name: "reject, idle thread: queued",
      when: (q) => q.enqueue("r1", "T", { reject: true }),
      returns: 1,
      then: {
        runs: { r1: pending() },
        queues: { T: ["r1"] },
        threadRuns: { T: ["r1"] },
        ready: { T: T0 },
        inflight: ["r1"],
      },
      published: [["wake", "T"]],
    },
    {
      name: "enqueue: behind the running and the queued run",
      given,
      when: (q) => q.enqueue("r3", "T"),
      returns: 1,
      then: {
        runs: { r1: running(), r2: pending(), r3: pending() },
        active: { T: "r1" },
        queues: { T: ["r2", "r3"] },
        threadRuns: { T: ["r1", "r2", "r3"] },
        ready: { T: T0 },
        leases: { r1: T0 + LEASE },
        inflight: ["r1", "r2", "r3"],
      },
      published: [["wake", "T"]],
    },
    {
      name: "interrupt: the new run queued, the running one signalled, the queued one interrupted",
      given,
      when: async (q) => [
        await q.enqueue("r3", "T"),
        await q.cancel("r1", "interrupt"),
        await q.cancel("r2", "interrupt"),
      ],
      returns: [1, "signalled", "cancelled"],
      then: {
        runs: { r1: running({ cancel: "interrupt" }), r2: pending({ status: "interrupted" }), r3: pending() },
        active: { T: "r1" },
        queues: { T: ["r3"] },
        threadRuns: { T: ["r1", "r2", "r3"] },
        ready: { T: T0 },
        leases: { r1: T0 + LEASE },
        inflight: ["r1", "r3"],
      },
      published: [
        ["wake", "T"],
        ["cancel", "r1 interrupt"],
      ],
    },
    {
      name: "rollback: the new run queued, the running one signalled, the queued one deleted",
      given,
      when: async (q) => [
        await q.enqueue("r3", "T"),
        await q.cancel("r1", "rollback"),
        await q.cancel("r2", "rollback"),
      ],
      returns: [1, "signalled", "cancelled"],
      then: {
        runs: { r1: running({ cancel: "rollback" }), r3: pending() },
        active: { T: "r1" },
        queues: { T: ["r3"] },
        threadRuns: { T: ["r1", "r3"] },
        ready: { T: T0 },
        leases: { r1: T0 + LEASE },
        inflight: ["r1", "r3"],
      },
      published: [
        ["wake", "T"],
        ["cancel", "r1 rollback"],
      ],
    },
  ]);
});
