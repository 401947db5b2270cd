import { describe } from "vitest";
import {
  connectScriptsRedis,
  endEvent,
  LEASE,
  r1Running,
  r1RunningR2Queued,
  running,
  T0,
  table,
} from "./testing/scripts-table.ts";

/** Transition table of the run-queue scripts (see testing/scripts-table.ts): DELETE, and deleting a thread's runs. */

connectScriptsRedis();

describe("DELETE", () => {
  table([
    {
      name: "an unknown run: missing",
      when: (q) => q.delete("r1"),
      returns: "missing",
      then: {},
    },
    {
      name: "a running run: running, nothing removed",
      given: r1Running,
      when: (q) => q.delete("r1"),
      returns: "running",
      then: {
        runs: { r1: running() },
        active: { T: "r1" },
        threadRuns: { T: ["r1"] },
        leases: { r1: T0 + LEASE },
        inflight: ["r1"],
      },
    },
    {
      name: "a pending run: out of its queue, the thread's runs and inflight, record deleted",
      given: r1RunningR2Queued,
      when: (q) => q.delete("r2"),
      returns: "deleted",
      then: {
        runs: { r1: running() },
        active: { T: "r1" },
        threadRuns: { T: ["r1"] },
        ready: { T: T0 },
        leases: { r1: T0 + LEASE },
        inflight: ["r1"],
      },
    },
    {
      name: "a finished run: record and thread entry deleted, its log left to the caller",
      given: async (q) => {
        await r1Running(q);
        await q.finish("r1", 1, "success");
      },
      when: (q) => q.delete("r1"),
      returns: "deleted",
      then: {
        events: { r1: [endEvent("success")] },
        expiring: ["ev:r1"],
      },
    },
  ]);
});

describe("deleting a thread's runs, as RunService composes it from CANCEL, DELETE and the worker's FINISH", () => {
  table([
    {
      name: "finished ones deleted, pending ones rolled back at once, the running one signalled and deleted by its worker",
      given: async (q) => {
        await q.enqueue("r0", "T", { leaseMs: LEASE });
        await q.finish("r0", 1, "success");
        await r1RunningR2Queued(q);
      },
      when: async (q) => [
        await q.cancel("r1", "rollback"),
        await q.cancel("r2", "rollback"),
        await q.delete("r0"),
        await q.finish("r1", 1, "deleted"),
      ],
      returns: ["signalled", "cancelled", "deleted", 1],
      then: {
        // The thread stays in ready, empty, until a claim drops it.
        ready: { T: T0 },
        events: { r0: [endEvent("success")], r1: [endEvent("deleted")] },
        expiring: ["ev:r0", "ev:r1"],
      },
      published: [
        ["cancel", "r1 rollback"],
        ["ev:r1", "end"],
      ],
    },
  ]);
});
