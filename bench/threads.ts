import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../agent-server/src/config.ts";
import { type AgentServer, startAgentServer } from "../agent-server/src/server.ts";
import type { ThreadStatus, ThreadStore } from "../agent-server/src/storage/types.ts";
import { measureHttpThroughput } from "./support/http-load.ts";
import { measureLatencies, percentile, round } from "./support/measure.ts";
import type { BenchResult } from "./types.ts";

const SEEDED_THREADS = 100_000;
const SEED_WINDOW = 500;
const CREATE_CLIENTS = 32;
const CREATE_SECONDS = 5;
const SEARCH_SAMPLES = 200;
const SETTLE_MS = 2000;
const STATUSES: ThreadStatus[] = ["idle", "busy", "interrupted", "error"];

const exampleProject = join(dirname(fileURLToPath(import.meta.url)), "../agent-server/example/langgraph.json");

/**
 * The real server (example project) on `redisUrl`, on a free port. This is the hook for the other
 * thread benchmarks: `bench/state.ts` (state and history reads) starts its server with it.
 */
export async function startBenchServer(redisUrl: string, prefix: string): Promise<AgentServer> {
  const config = loadConfig(["serve", "--config", exampleProject, "--port", "0", "--host", "127.0.0.1"], {
    REDIS_URI: redisUrl,
    REDIS_PREFIX: prefix,
    LOG_LEVEL: "silent",
  });
  return startAgentServer(config);
}

/**
 * `count` threads written straight through the store, many calls in flight so node-redis
 * pipelines them: user_id has 997 values, org 17, status is spread evenly (coprime moduli, so
 * the three are independent).
 */
export async function seedThreads(threads: ThreadStore, count: number): Promise<void> {
  const seedOne = async (i: number) => {
    const thread = await threads.create({ metadata: { user_id: `user-${i % 997}`, org: `org-${i % 17}` } });
    const status = STATUSES[i % STATUSES.length] as ThreadStatus;
    if (status !== "idle") await threads.update(thread.thread_id, { status });
  };
  for (let start = 0; start < count; start += SEED_WINDOW) {
    await Promise.all(Array.from({ length: Math.min(SEED_WINDOW, count - start) }, (_, k) => seedOne(start + k)));
  }
}

const post = async (url: string, body: unknown) => {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${url} answered ${res.status}: ${await res.text()}`);
  return res.json();
};

/** The common searches, by name: each is measured SEARCH_SAMPLES times. */
const searches: Record<string, (i: number) => object> = {
  "newest updated": () => ({ sort_by: "updated_at", limit: 10 }),
  "by user_id (~100 hits)": (i) => ({ metadata: { user_id: `user-${i % 997}` }, limit: 10 }),
  "by status (~25k hits)": () => ({ status: "busy", limit: 10 }),
  "by org + status (~1.5k hits)": (i) => ({ metadata: { org: `org-${i % 17}` }, status: "interrupted", limit: 10 }),
  "by org, third page (~6k hits)": (i) => ({ metadata: { org: `org-${i % 17}` }, offset: 20, limit: 10 }),
};

export async function run(redisUrl: string): Promise<BenchResult[]> {
  const server = await startBenchServer(redisUrl, "bench-threads:");
  try {
    const seedStart = performance.now();
    await seedThreads(server.ctx.storage.threads, SEEDED_THREADS);
    const seedSeconds = (performance.now() - seedStart) / 1000;

    const createRate = await measureHttpThroughput({
      url: `${server.url}/threads`,
      method: "POST",
      bodyTemplate: JSON.stringify({ metadata: { user_id: "user-{n}", source: "bench" } }),
      concurrency: CREATE_CLIENTS,
      durationMs: CREATE_SECONDS * 1000,
    });

    // Let the server and Redis finish what the create burst left behind (GC, dict rehashing).
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const byKind: BenchResult[] = [];
    const latencies: number[] = [];
    for (const [kind, query] of Object.entries(searches)) {
      const measured = await measureLatencies(SEARCH_SAMPLES, (i) => post(`${server.url}/threads/search`, query(i)));
      latencies.push(...measured);
      byKind.push({ name: `  search ${kind} p99`, value: round(percentile(measured, 99), 2), unit: "ms" });
    }

    return [
      { name: "thread seed via store (100k)", value: round(SEEDED_THREADS / seedSeconds, 0), unit: "threads/s" },
      {
        name: `thread create, ${CREATE_CLIENTS} clients, HTTP`,
        value: round(createRate, 0),
        unit: "req/s",
        target: ">= 3000",
      },
      { name: "thread search p50 (100k threads)", value: round(percentile(latencies, 50), 2), unit: "ms" },
      {
        name: "thread search p99 (100k threads)",
        value: round(percentile(latencies, 99), 2),
        unit: "ms",
        target: "<= 20",
      },
      ...byKind,
    ];
  } finally {
    await server.close();
  }
}
