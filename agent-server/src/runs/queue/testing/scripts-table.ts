import { afterAll, beforeAll, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../../../testing/redis.ts";
import type { RedisClient } from "../../../storage/redis-client.ts";
import type { RedisScript } from "../../../storage/redis-script.ts";
import { CANCEL, CLAIM, DELETE, ENQUEUE, FINISH, RENEW, SWEEP } from "../redis-scripts.ts";

/**
 * Transition table of the run-queue scripts: each row seeds a queue through the scripts, makes
 * one call (or the sequence of calls a caller makes for one operation), and compares the reply,
 * every key of the queue afterwards and every message published during the call. Time is an
 * argument of the scripts, so a virtual clock makes due times and lease expiry exact, without
 * waiting.
 */

/** The test Redis of the calling file (set by `connectScriptsRedis`); rows seed keys with it directly. */
export let redis: RedisClient;
let subscriber: RedisClient;

/** Connects `redis` for the calling test file: call once at its top level. */
export function connectScriptsRedis(): void {
  beforeAll(async () => {
    redis = (await connectTestRedis()) as RedisClient;
    subscriber = redis.duplicate();
    await subscriber.connect();
  });
  afterAll(async () => {
    await subscriber?.close();
    await redis?.close();
  });
}

/** The virtual now (ms). */
export const T0 = 1_000_000;
export const LEASE = 1000;
export const iso = "2026-01-01T00:00:00.000Z";

/** The scripts with the arguments `RedisRunStore` passes, the clock made explicit. */
export class Queue {
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

export interface RunState {
  status: string;
  attempt: number;
  start_at: number;
  started_at?: number;
  cancel?: string;
}

/** Every key of the queue, by what it means (key layout: see redis-scripts.ts). */
export interface State {
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

export const EMPTY: State = {
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

export async function readState(prefix: string): Promise<State> {
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
export async function recordMessages(prefix: string) {
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

export interface Row {
  name: string;
  given?: (q: Queue) => Promise<unknown>;
  when: (q: Queue) => Promise<unknown>;
  returns: unknown;
  /** The whole state after the call; what is left out is empty. */
  then: Partial<State>;
  published?: [string, string][];
}

export function table(rows: Row[]) {
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

export const pending = (over: Partial<RunState> = {}): RunState => ({
  status: "pending",
  attempt: 0,
  start_at: T0,
  ...over,
});
export const running = (over: Partial<RunState> = {}): RunState => ({
  status: "running",
  attempt: 1,
  start_at: T0,
  started_at: T0,
  ...over,
});
export const ended = (status: string, over: Partial<RunState> = {}): RunState => ({ ...running(over), status });
export const json = (runId: string) => JSON.stringify({ run_id: runId });
export const endEvent = (status: string): [string, string] => ["__end__", `{"status":"${status}"}`];

/** r1 running on T (claimed at creation, attempt 1, lease until T0 + LEASE). */
export const r1Running = (q: Queue) => q.enqueue("r1", "T", { leaseMs: LEASE });
/** r1 running on T, r2 queued behind it. */
export const r1RunningR2Queued = async (q: Queue) => {
  await r1Running(q);
  await q.enqueue("r2", "T");
};
/** r1 handed back by the sweep and claimed again: attempt 2 holds it, attempt 1 is stale. */
export const r1Reclaimed = async (q: Queue) => {
  await r1Running(q);
  await q.sweep(T0 + LEASE);
  await q.claim(T0 + 2000);
};

/** What `r1Reclaimed` leaves: r1 running again, as its second attempt, under a new lease. */
export const r1ReclaimedState = {
  runs: { r1: running({ attempt: 2 }) },
  active: { T: "r1" },
  threadRuns: { T: ["r1"] },
  leases: { r1: T0 + 2000 + LEASE },
  inflight: ["r1"],
};

/** 50 threads, each running a run and with another queued: 50 due entries of ready that cannot be claimed. */
export const BUSY_THREADS = Array.from({ length: 50 }, (_, i) => `B${String(i).padStart(2, "0")}`);
