import { randomUUID } from "node:crypto";
import { Agent } from "node:http";
import { createClient } from "redis";
import { RedisRunStore } from "../agent-server/src/runs/queue/redis-store.ts";
import type { Run } from "../agent-server/src/runs/schemas.ts";
import { spawnServer } from "../agent-server/src/runs/testing/process.ts";
import type { RedisClient } from "../agent-server/src/storage/redis-client.ts";
import { runQueuePrefix } from "../agent-server/src/threads/redis-index.ts";
import { percentile, round } from "./support/measure.ts";
import { call, input, median } from "./support/run-load.ts";
import type { BenchResult } from "./types.ts";

/**
 * A deep run queue: claim latency and `/metrics` scrape time with 0, 1,000, 10,000 and 100,000
 * runs pending on many threads (10 per thread), which must stay flat. The server runs with no
 * workers (N_WORKERS=0), so what is queued stays queued. The first 1,000 runs go through the
 * public API (`POST /threads`, `POST /threads/{id}/runs`); the rest through the server's own
 * `RedisRunStore.enqueue` (the same Lua script, pipelined), copies of an API-made run record:
 * 100,000 HTTP round trips take too long on a shared machine. Claims are the server's
 * `RedisRunStore.claim` (the worker's call, one Lua script), each followed by one more enqueue
 * and the claimed run's `finish`, so the queue keeps its depth. `QUEUE_SCALE_RUNS` caps the
 * depth (default 100,000).
 */

const DEPTHS = [0, 1000, 10_000, 100_000].filter((depth) => depth <= Number(process.env.QUEUE_SCALE_RUNS ?? 100_000));
const RUNS_PER_THREAD = 10;
const API_RUNS = 1000;
const API_CLIENTS = 16;
const STORE_BATCH = 1000;
const CLAIM_SAMPLES = 200;
const SCRAPE_SAMPLES = 100;
const WARM_SCRAPES = 10;
const LEASE_MS = 60_000;

type Json = Record<string, unknown>;

async function json(response: { status: number; text: string }, what: string): Promise<Json> {
  if (response.status !== 200) throw new Error(`${what} answered ${response.status}: ${response.text.slice(0, 200)}`);
  return JSON.parse(response.text) as Json;
}

/** The `agentplane_runs_inflight{status="pending"}` sample of a scrape. */
const pendingIn = (scrape: string) => Number(/^agentplane_runs_inflight\{status="pending"\} (\d+)/m.exec(scrape)?.[1]);

export async function run(redisUrl: string): Promise<BenchResult[]> {
  const prefix = `bench-queue-${randomUUID().slice(0, 8)}:`;
  const server = await spawnServer(redisUrl, prefix, { N_WORKERS: "0", LOG_LEVEL: "error" });
  const agent = new Agent({ keepAlive: true, maxSockets: API_CLIENTS });
  const redis: RedisClient = createClient({ url: redisUrl });
  await redis.connect();
  const store = new RedisRunStore(redis, runQueuePrefix(prefix));
  try {
    let template: Run | undefined;
    /** Runs pending now: every claim below is preceded by one more enqueue. */
    let queued = 0;
    let threadId = randomUUID();
    const nextThread = () => {
      if (queued++ % RUNS_PER_THREAD === 0) threadId = randomUUID();
      return threadId;
    };
    /** Stores a copy of the API-made template, due now, as `POST /threads/{id}/runs` does. */
    const enqueueCopy = async (thread: string) => {
      const now = new Date().toISOString();
      const copy = { ...(template as Run), run_id: randomUUID(), thread_id: thread, created_at: now, updated_at: now };
      const outcome = await store.enqueue(copy, { startAt: Date.now(), rejectIfBusy: false });
      if (outcome.outcome !== "queued") throw new Error(`enqueue: ${outcome.outcome}`);
    };
    /** Through the API, a thread per RUNS_PER_THREAD runs; returns runs/s. */
    const enqueueByApi = async (count: number) => {
      const threads = Array.from({ length: Math.ceil(count / RUNS_PER_THREAD) }, () => randomUUID());
      const began = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: API_CLIENTS }, async () => {
          for (let i = next++; i < threads.length; i = next++) {
            const thread_id = threads[i] as string;
            await json(await call(agent, `${server.url}/threads`, "POST", { thread_id }), "thread create");
            for (let r = 0; r < Math.min(RUNS_PER_THREAD, count - i * RUNS_PER_THREAD); r++) {
              const body = { assistant_id: "agent", input, multitask_strategy: "enqueue" };
              const url = `${server.url}/threads/${thread_id}/runs`;
              const created = (await json(await call(agent, url, "POST", body), "run create")) as unknown as Run;
              template ??= created;
              queued++;
            }
          }
        }),
      );
      return (count / (performance.now() - began)) * 1000;
    };
    const fillTo = async (depth: number) => {
      while (queued < depth) {
        const batch = Math.min(STORE_BATCH, depth - queued);
        await Promise.all(Array.from({ length: batch }, () => enqueueCopy(nextThread())));
      }
    };
    /** One claim of the oldest due run, timed; the depth is kept by one enqueue before, and the run finished after. */
    const claimLatencies = async (samples: number) => {
      const latencies: number[] = [];
      for (let i = 0; i < samples; i++) {
        await enqueueCopy(randomUUID());
        const began = performance.now();
        const { claimed } = await store.claim(LEASE_MS);
        latencies.push(performance.now() - began);
        if (!claimed) throw new Error("nothing to claim");
        await store.finish(claimed.run.run_id, claimed.attempt, "success", { data: "{}", keepSeconds: 60 });
      }
      return latencies;
    };
    /** Scrapes after WARM_SCRAPES unmeasured ones (the fill before leaves the server collecting garbage). */
    const scrapeLatencies = async () => {
      const latencies: number[] = [];
      for (let i = -WARM_SCRAPES; i < SCRAPE_SAMPLES; i++) {
        const began = performance.now();
        const scrape = await call(agent, `${server.url}/metrics`, "GET");
        if (i >= 0) latencies.push(performance.now() - began);
        if (scrape.status !== 200) throw new Error(`/metrics answered ${scrape.status}`);
        if (pendingIn(scrape.text) !== queued) {
          throw new Error(`/metrics counts ${pendingIn(scrape.text)} pending runs, ${queued} are queued`);
        }
      }
      return latencies;
    };

    // The template from the API, then warm-ups (route and script compilation) on a queue kept empty.
    await enqueueByApi(1);
    const { claimed } = await store.claim(LEASE_MS);
    if (!claimed) throw new Error("the API-made run was not queued");
    await store.finish(claimed.run.run_id, claimed.attempt, "success", { data: "{}", keepSeconds: 60 });
    queued = 0;
    await scrapeLatencies();
    await claimLatencies(CLAIM_SAMPLES / 4);
    const results: BenchResult[] = [];
    const figures = new Map<number, { claim: number; scrape: number }>();
    let apiRate = 0;
    for (const depth of DEPTHS) {
      if (queued === 0 && depth >= API_RUNS) apiRate = await enqueueByApi(API_RUNS);
      await fillTo(depth);
      const scrapes = await scrapeLatencies();
      const claims = await claimLatencies(CLAIM_SAMPLES);
      figures.set(depth, { claim: median(claims), scrape: median(scrapes) });
      const at = `${depth.toLocaleString("en")} queued`;
      results.push(
        { name: `queue-scale: claim latency p50, ${at}`, value: round(median(claims), 2), unit: "ms" },
        { name: `queue-scale: claim latency p99, ${at}`, value: round(percentile(claims, 99), 2), unit: "ms" },
        { name: `queue-scale: /metrics scrape p50, ${at}`, value: round(median(scrapes), 2), unit: "ms" },
        { name: `queue-scale: /metrics scrape p99, ${at}`, value: round(percentile(scrapes, 99), 2), unit: "ms" },
      );
    }
    const deepest = DEPTHS[DEPTHS.length - 1] as number;
    const shallow = figures.get(API_RUNS);
    const deep = figures.get(deepest);
    if (shallow && deep && deepest > API_RUNS) {
      const vs = `${deepest.toLocaleString("en")} / 1,000 queued`;
      results.push(
        {
          name: `queue-scale: claim latency p50, ${vs}`,
          value: round(deep.claim / shallow.claim, 2),
          unit: "x",
          target: "<= 1.5",
        },
        {
          name: `queue-scale: /metrics scrape p50, ${vs}`,
          value: round(deep.scrape / shallow.scrape, 2),
          unit: "x",
          target: "<= 1.5",
        },
      );
    }
    if (apiRate > 0) {
      results.push({
        name: "queue-scale: run create through the API, 16 clients",
        value: round(apiRate),
        unit: "runs/s",
      });
    }
    return results;
  } finally {
    agent.destroy();
    await redis.close();
    await server.stop();
  }
}
