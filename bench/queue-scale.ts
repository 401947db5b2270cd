import { randomUUID } from "node:crypto";
import { Agent } from "node:http";
import { createClient } from "redis";
import { RedisRunStore } from "../agent-server/src/runs/queue/redis-store.ts";
import type { Run } from "../agent-server/src/runs/schemas.ts";
import { type ServerProcess, spawnServer } from "../agent-server/src/runs/testing/process.ts";
import type { RedisClient } from "../agent-server/src/storage/redis-client.ts";
import { runQueuePrefix } from "../agent-server/src/threads/redis-index.ts";
import { percentile, round } from "./support/measure.ts";
import { call, input, median } from "./support/run-load.ts";
import type { BenchResult } from "./types.ts";

/**
 * A deep run queue: claim latency and `/metrics` scrape time with 0, 1,000, 10,000 and 100,000
 * runs pending on many threads (10 per thread), which must stay flat.
 *
 * Each depth is a queue of its own (its own Redis prefix, one Redis) with a server process of
 * its own started with no workers (N_WORKERS=0), so what is queued stays queued; the depths are
 * measured in alternating rounds, so a change in the machine's speed (large here) falls on all
 * of them alike. The first 1,000 runs of a queue go through the public API (`POST /threads`,
 * `POST /threads/{id}/runs`); the rest through the server's own `RedisRunStore.enqueue` (the same
 * Lua script, pipelined), copies of an API-made run record: 100,000 HTTP round trips take too long
 * on a shared machine. A claim is the server's `RedisRunStore.claim` (what a worker calls: one Lua
 * script) of the oldest due run, after one more enqueue and followed by the claimed run's
 * `finish`, so the queue keeps its depth. `QUEUE_SCALE_RUNS` caps the depth (default 100,000).
 */

const DEPTHS = [0, 1000, 10_000, 100_000].filter((depth) => depth <= Number(process.env.QUEUE_SCALE_RUNS ?? 100_000));
const RUNS_PER_THREAD = 10;
const API_RUNS = 1000;
const API_CLIENTS = 16;
const STORE_BATCH = 1000;
const ROUNDS = 10;
const CLAIMS_PER_ROUND = 30;
const SCRAPES_PER_ROUND = 15;
const LEASE_MS = 60_000;

type Json = Record<string, unknown>;

async function json(response: { status: number; text: string }, what: string): Promise<Json> {
  if (response.status !== 200) throw new Error(`${what} answered ${response.status}: ${response.text.slice(0, 200)}`);
  return JSON.parse(response.text) as Json;
}

/** The `agentplane_runs_inflight{status="pending"}` sample of a scrape. */
const pendingIn = (scrape: string) => Number(/^agentplane_runs_inflight\{status="pending"\} (\d+)/m.exec(scrape)?.[1]);

/** One queue kept at `depth` pending runs, with its server (for `/metrics`) and its store (for claims). */
class Queue {
  readonly claims: number[] = [];
  readonly scrapes: number[] = [];
  /** Runs pending now: every claim is preceded by one more enqueue. */
  #queued = 0;
  #template: Run | undefined;

  readonly depth: number;
  readonly server: ServerProcess;
  readonly #store: RedisRunStore;
  readonly #agent: Agent;

  private constructor(depth: number, server: ServerProcess, store: RedisRunStore, agent: Agent) {
    this.depth = depth;
    this.server = server;
    this.#store = store;
    this.#agent = agent;
  }

  static async start(depth: number, redisUrl: string, redis: RedisClient, agent: Agent): Promise<Queue> {
    const prefix = `bench-queue-${randomUUID().slice(0, 8)}:`;
    const server = await spawnServer(redisUrl, prefix, { N_WORKERS: "0", LOG_LEVEL: "error" });
    return new Queue(depth, server, new RedisRunStore(redis, runQueuePrefix(prefix)), agent);
  }

  /** Through the API, a thread per RUNS_PER_THREAD runs; returns runs/s. */
  async enqueueByApi(count: number): Promise<number> {
    const threads = Array.from({ length: Math.ceil(count / RUNS_PER_THREAD) }, () => randomUUID());
    const began = performance.now();
    let next = 0;
    const body = { assistant_id: "agent", input, multitask_strategy: "enqueue" };
    await Promise.all(
      Array.from({ length: API_CLIENTS }, async () => {
        for (let i = next++; i < threads.length; i = next++) {
          const thread_id = threads[i] as string;
          await json(await call(this.#agent, `${this.server.url}/threads`, "POST", { thread_id }), "thread create");
          for (let r = 0; r < Math.min(RUNS_PER_THREAD, count - i * RUNS_PER_THREAD); r++) {
            const url = `${this.server.url}/threads/${thread_id}/runs`;
            const created = (await json(await call(this.#agent, url, "POST", body), "run create")) as unknown as Run;
            this.#template ??= created;
            this.#queued++;
          }
        }
      }),
    );
    return (count / (performance.now() - began)) * 1000;
  }

  /** Stores a copy of the API-made template, due now, as `POST /threads/{id}/runs` does. */
  async #enqueueCopy(threadId: string): Promise<void> {
    const now = new Date().toISOString();
    const copy = {
      ...(this.#template as Run),
      run_id: randomUUID(),
      thread_id: threadId,
      created_at: now,
      updated_at: now,
    };
    const outcome = await this.#store.enqueue(copy, { startAt: Date.now(), rejectIfBusy: false });
    if (outcome.outcome !== "queued") throw new Error(`enqueue: ${outcome.outcome}`);
  }

  /** Up to `depth`, RUNS_PER_THREAD runs per thread. */
  async fill(): Promise<void> {
    let threadId = randomUUID();
    while (this.#queued < this.depth) {
      const batch = Math.min(STORE_BATCH, this.depth - this.#queued);
      const threads = Array.from({ length: batch }, () => {
        if (this.#queued++ % RUNS_PER_THREAD === 0) threadId = randomUUID();
        return threadId;
      });
      await Promise.all(threads.map((thread) => this.#enqueueCopy(thread)));
    }
  }

  /** Drains what the API put in (for the empty queue, which needs the template all the same). */
  async drain(): Promise<void> {
    for (;;) {
      const { claimed } = await this.#store.claim(LEASE_MS);
      if (!claimed) break;
      await this.#store.finish(claimed.run.run_id, claimed.attempt, "success", { data: "{}", keepSeconds: 60 });
      this.#queued--;
    }
  }

  async measureClaims(samples: number, into?: number[]): Promise<void> {
    for (let i = 0; i < samples; i++) {
      await this.#enqueueCopy(randomUUID());
      const began = performance.now();
      const { claimed } = await this.#store.claim(LEASE_MS);
      into?.push(performance.now() - began);
      if (!claimed) throw new Error("nothing to claim");
      await this.#store.finish(claimed.run.run_id, claimed.attempt, "success", { data: "{}", keepSeconds: 60 });
    }
  }

  async measureScrapes(samples: number, into?: number[]): Promise<void> {
    for (let i = 0; i < samples; i++) {
      const began = performance.now();
      const scrape = await call(this.#agent, `${this.server.url}/metrics`, "GET");
      into?.push(performance.now() - began);
      if (scrape.status !== 200) throw new Error(`/metrics answered ${scrape.status}`);
      if (pendingIn(scrape.text) !== this.#queued) {
        throw new Error(`/metrics counts ${pendingIn(scrape.text)} pending runs, ${this.#queued} are queued`);
      }
    }
  }
}

export async function run(redisUrl: string): Promise<BenchResult[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: API_CLIENTS });
  const redis: RedisClient = createClient({ url: redisUrl });
  await redis.connect();
  const queues: Queue[] = [];
  try {
    for (const depth of DEPTHS) queues.push(await Queue.start(depth, redisUrl, redis, agent));
    const apiRates: number[] = [];
    for (const queue of queues) {
      apiRates.push(await queue.enqueueByApi(Math.max(1, Math.min(API_RUNS, queue.depth))));
      if (queue.depth === 0) await queue.drain();
      await queue.fill();
      // Warm-up: route and script compilation, and the garbage of the fill collected.
      await queue.measureScrapes(SCRAPES_PER_ROUND * 3);
      await queue.measureClaims(CLAIMS_PER_ROUND * 3);
    }
    // Per-round ratios to the 1,000-deep queue, as medians: each round's machine speed cancels out.
    const ratios = new Map<number, { claim: number[]; scrape: number[] }>();
    for (let pass = 0; pass < ROUNDS; pass++) {
      const medians = new Map<number, { claim: number; scrape: number }>();
      for (const queue of pass % 2 === 0 ? queues : [...queues].reverse()) {
        const claims: number[] = [];
        const scrapes: number[] = [];
        await queue.measureClaims(CLAIMS_PER_ROUND, claims);
        await queue.measureScrapes(SCRAPES_PER_ROUND, scrapes);
        queue.claims.push(...claims);
        queue.scrapes.push(...scrapes);
        medians.set(queue.depth, { claim: median(claims), scrape: median(scrapes) });
      }
      const shallow = medians.get(API_RUNS);
      for (const [depth, figures] of medians) {
        if (!shallow || depth <= API_RUNS) continue;
        const entry = ratios.get(depth) ?? { claim: [], scrape: [] };
        entry.claim.push(figures.claim / shallow.claim);
        entry.scrape.push(figures.scrape / shallow.scrape);
        ratios.set(depth, entry);
      }
    }
    const results: BenchResult[] = [];
    for (const queue of queues) {
      const at = `${queue.depth.toLocaleString("en")} queued`;
      results.push(
        { name: `queue-scale: claim latency p50, ${at}`, value: round(median(queue.claims), 2), unit: "ms" },
        { name: `queue-scale: claim latency p99, ${at}`, value: round(percentile(queue.claims, 99), 2), unit: "ms" },
        { name: `queue-scale: /metrics scrape p50, ${at}`, value: round(median(queue.scrapes), 2), unit: "ms" },
        { name: `queue-scale: /metrics scrape p99, ${at}`, value: round(percentile(queue.scrapes, 99), 2), unit: "ms" },
      );
    }
    for (const [depth, { claim, scrape }] of ratios) {
      const vs = `${depth.toLocaleString("en")} / 1,000 queued (median of ${ROUNDS} rounds)`;
      results.push(
        { name: `queue-scale: claim latency p50, ${vs}`, value: round(median(claim), 2), unit: "x", target: "<= 1.5" },
        {
          name: `queue-scale: /metrics scrape p50, ${vs}`,
          value: round(median(scrape), 2),
          unit: "x",
          target: "<= 1.5",
        },
      );
    }
    const apiFills = apiRates.filter((_, i) => (queues[i]?.depth ?? 0) >= API_RUNS);
    if (apiFills.length > 0) {
      const name = `queue-scale: run create through the API, ${API_CLIENTS} clients`;
      results.push({ name, value: round(median(apiFills)), unit: "runs/s" });
    }
    return results;
  } finally {
    agent.destroy();
    await redis.close();
    await Promise.all(queues.map((queue) => queue.server.stop()));
  }
}
