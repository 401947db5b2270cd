import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../../testing/redis.ts";
import type { RedisClient } from "../../storage/redis-client.ts";
import type { RedisScript } from "../../storage/redis-script.ts";
import { CANCEL, CLAIM, DELETE, ENQUEUE, FINISH, RENEW, SWEEP } from "./redis-scripts.ts";

/**
 * Transition table of the run-queue scripts: each row seeds a queue through the scripts, makes
 * one call (or the sequence of calls a caller makes for one operation), and compares the reply,
 * every key of the queue afterwards and every message published during the call. Time is an
 * argument of the scripts, so a virtual clock makes due times and lease expiry exact, without
 * waiting.
 */

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

/** The virtual now (ms). */
const T0 = 1_000_000;
const LEASE = 1000;
const iso = "2026-01-01T00:00:00.000Z";

/** The scripts with the arguments `RedisRunStore` passes, the clock made explicit. */
class Queue {
  readonly prefix: string;
  constructor(prefix: string) {
    this.prefix = prefix;
  }
  #run(script: RedisScript, ...args: (string | number)[]): Promise<unknown> {
    return script.run(redis, [], [this.prefix, ...args.map(String)]);
  }
  /** `leaseMs` > 0: claim at once when the thread is idle (the store asks only for runs due now, at `startAt` = now). */
  enqueue(runId: string, threadId: string, { startAt = T0, reject = false, leaseMs = 0, threadKey = "" } = {}) {
    const json = JSON.stringify({ run_id: runId });
    return this.#run(ENQUEUE, runId, threadId, json, iso, startAt, reject ? 1 : 0, leaseMs, threadKey);
  }
  claim(now = T0, leaseMs = LEASE) {
    return this.#run(CLAIM, now, leaseMs, iso);
  }
  renew(runId: string, attempt: number, expiry: number) {
    return this.#run(RENEW, runId, attempt, expiry);
  }
  finish(runId: string, attempt: number, status: string, { now = T0, temporary = false } = {}) {
    return this.#run(
      FINISH,
      runId,
      attempt,
      status,
      iso,
      now,
      0,
      "__end__",
      `{"status":"${status}"}`,
      60,
      temporary ? 1 : 0,
    );
  }
  requeue(runId: string, attempt: number, now = T0) {
    return this.#run(FINISH, runId, attempt, "pending", iso, now, 1, "", "", 0, 0);
  }
  cancel(runId: string, action: "interrupt" | "rollback") {
    return this.#run(CANCEL, runId, action, iso);
  }
  sweep(now: number, maxAttempts = 3) {
    return this.#run(SWEEP, now, maxAttempts, iso);
  }
  delete(runId: string) {
    return this.#run(DELETE, runId);
  }
}

interface RunState {
  status: string;
  attempt: number;
  start_at: number;
  started_at?: number;
  cancel?: string;
}

/** Every key of the queue, by what it means (key layout: see redis-scripts.ts). */
interface State {
  runs: Record<string, RunState>;
  /** ta:<thread>: the run holding the thread's lock. */
  active: Record<string, string>;
  /** tq:<thread>: pending run ids, head first. */
  queues: Record<string, string[]>;
  /** tr:<thread>: every run id of the thread, by arrival. */
  threadRuns: Record<string, string[]>;
  /** Threads with queued runs, by when the head run is due. */
  ready: Record<string, number>;
  /** Running run ids, by lease expiry. */
  leases: Record<string, number>;
  inflight: string[];
  /** ev:<run>: the entries of the run's event log. */
  events: Record<string, [string, string][]>;
  /** Keys (without the prefix) that have a time to live. */
  expiring: string[];
}

const EMPTY: State = {
  runs: {},
  active: {},
  queues: {},
  threadRuns: {},
  ready: {},
  leases: {},
  inflight: [],
  events: {},
  expiring: [],
};

async function readState(prefix: string): Promise<State> {
  const state: State = structuredClone(EMPTY);
  const keys: string[] = [];
  for await (const batch of redis.scanIterator({ MATCH: `${prefix}*` })) keys.push(...batch);
  for (const key of keys.sort()) {
    const name = key.slice(prefix.length);
    const [kind, id = ""] = name.split(/:(.*)/s);
    if ((await redis.ttl(key)) > 0) state.expiring.push(name);
    if (kind === "run") {
      const hash = await redis.hGetAll(key);
      state.runs[id] = {
        status: hash.status as string,
        attempt: Number(hash.attempt),
        start_at: Number(hash.start_at),
        ...(hash.started_at !== undefined && { started_at: Number(hash.started_at) }),
        ...(hash.cancel !== undefined && { cancel: hash.cancel }),
      };
    } else if (kind === "ta") state.active[id] = (await redis.get(key)) as string;
    else if (kind === "tq") state.queues[id] = await redis.lRange(key, 0, -1);
    else if (kind === "tr") state.threadRuns[id] = await redis.zRange(key, 0, -1);
    else if (kind === "ready" || kind === "leases") {
      for (const { value, score } of await redis.zRangeWithScores(key, 0, -1)) state[kind][value] = score;
    } else if (kind === "inflight") state.inflight = await redis.zRange(key, 0, -1);
    else if (kind === "ev") {
      const entries = (await redis.xRange(key, "-", "+")) ?? [];
      state.events[id] = entries.map(({ message }) => [message.event as string, message.data as string]);
    } else if (kind !== "seq") throw new Error(`unexpected key ${key}`);
  }
  return state;
}

/**
 * Messages published under the prefix, as [channel without the prefix, message]. A barrier
 * message published after a call arrives after everything the call published (Redis delivers in
 * publish order), so waiting for it proves the call published nothing more.
 */
async function recordMessages(prefix: string) {
  const seen: [string, string][] = [];
  let barriers = 0;
  const listener = (message: string, channel: string) => {
    seen.push([channel.slice(prefix.length), message]);
  };
  await subscriber.pSubscribe(`${prefix}*`, listener);
  const drain = async (): Promise<[string, string][]> => {
    const barrier = String(++barriers);
    await redis.publish(`${prefix}barrier`, barrier);
    const deadline = Date.now() + 5000;
    while (!seen.some(([channel, message]) => channel === "barrier" && message === barrier)) {
      if (Date.now() > deadline) throw new Error("the barrier message never arrived");
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    return seen.splice(0).filter(([channel]) => channel !== "barrier");
  };
  return { drain, stop: () => subscriber.pUnsubscribe(`${prefix}*`, listener) };
}

interface Row {
  name: string;
  given?: (q: Queue) => Promise<unknown>;
  when: (q: Queue) => Promise<unknown>;
  returns: unknown;
  /** The whole state after the call; what is left out is empty. */
  then: Partial<State>;
  published?: [string, string][];
}

function table(rows: Row[]) {
  for (const row of rows) {
    it(row.name, async () => {
      const q = new Queue(uniquePrefix("scripts"));
      const messages = await recordMessages(q.prefix);
      try {
        await row.given?.(q);
        await messages.drain();
        expect(await row.when(q)).toEqual(row.returns);
        expect(await messages.drain()).toEqual(row.published ?? []);
        expect(await readState(q.prefix)).toEqual({ ...EMPTY, ...row.then });
      } finally {
        await messages.stop();
      }
    });
  }
}

const pending = (over: Partial<RunState> = {}): RunState => ({ status: "pending", attempt: 0, start_at: T0, ...over });
const running = (over: Partial<RunState> = {}): RunState => ({
  status: "running",
  attempt: 1,
  start_at: T0,
  started_at: T0,
  ...over,
});
const ended = (status: string, over: Partial<RunState> = {}): RunState => ({ ...running(over), status });
const json = (runId: string) => JSON.stringify({ run_id: runId });
const endEvent = (status: string): [string, string] => ["__end__", `{"status":"${status}"}`];

/** r1 running on T (claimed at creation, attempt 1, lease until T0 + LEASE). */
const r1Running = (q: Queue) => q.enqueue("r1", "T", { leaseMs: LEASE });
/** r1 running on T, r2 queued behind it. */
const r1RunningR2Queued = async (q: Queue) => {
  await r1Running(q);
  await q.enqueue("r2", "T");
};
/** r1 handed back by the sweep and claimed again: attempt 2 holds it, attempt 1 is stale. */
const r1Reclaimed = async (q: Queue) => {
  await r1Running(q);
  await q.sweep(T0 + LEASE);
  await q.claim(T0 + 2000);
};

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

/** 50 threads, each running a run and with another queued: 50 due entries of ready that cannot be claimed. */
const BUSY_THREADS = Array.from({ length: 50 }, (_, i) => `B${String(i).padStart(2, "0")}`);

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
      then: {
        runs: { r1: running({ attempt: 2 }) },
        active: { T: "r1" },
        threadRuns: { T: ["r1"] },
        leases: { r1: T0 + 2000 + LEASE },
        inflight: ["r1"],
      },
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
      then: {
        runs: { r1: running({ attempt: 2 }) },
        active: { T: "r1" },
        threadRuns: { T: ["r1"] },
        leases: { r1: T0 + 2000 + LEASE },
        inflight: ["r1"],
      },
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

describe("FINISH", () => {
  table([
    {
      name: "success by the holder: final status, lock and lease freed, log closed and its end published; nothing queued, no wake",
      given: r1Running,
      when: (q) => q.finish("r1", 1, "success"),
      returns: 1,
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
      returns: 1,
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
      returns: 1,
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
      then: {
        runs: { r1: running({ attempt: 2 }) },
        active: { T: "r1" },
        threadRuns: { T: ["r1"] },
        leases: { r1: T0 + 2000 + LEASE },
        inflight: ["r1"],
      },
    },
    {
      name: "a requeue with a stale attempt: lease lost (0), nothing changes",
      given: r1Reclaimed,
      when: (q) => q.requeue("r1", 1),
      returns: 0,
      then: {
        runs: { r1: running({ attempt: 2 }) },
        active: { T: "r1" },
        threadRuns: { T: ["r1"] },
        leases: { r1: T0 + 2000 + LEASE },
        inflight: ["r1"],
      },
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
