import { Agent, request } from "node:http";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { measureHttpThroughput } from "./support/http-load.ts";
import { round } from "./support/measure.ts";
import { startBenchServer } from "./threads.ts";
import type { BenchResult } from "./types.ts";

const CLIENTS = 32;
const DURATION_MS = 3_000;
const WARMUP_MS = 500;
const SEARCH_NAMESPACES = 32;
const ITEMS_PER_NAMESPACE = 200;

interface PairLoad {
  baseUrl: string;
  durationMs: number;
}

function send(agent: Agent, url: string, method: string, body?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent, headers: { "content-type": "application/json" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Each client PUTs an item then GETs it back (worker-thread side); returns completed pairs per second. */
async function putGetPairs({ baseUrl, durationMs }: PairLoad): Promise<{ pairs: number; failed: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
  const start = performance.now();
  let pairs = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      for (let i = 0; performance.now() - start < durationMs; i++) {
        const key = `k${i % 500}`;
        const value = { text: `user said thing number ${i}`, score: i % 10 };
        const put = await send(
          agent,
          `${baseUrl}/store/items`,
          "PUT",
          JSON.stringify({ namespace: ["bench", `user-${client}`], key, value }),
        );
        const get = await send(agent, `${baseUrl}/store/items?namespace=bench.user-${client}&key=${key}`, "GET");
        if (put === 204 && get === 200) pairs++;
        else failed++;
      }
    }),
  );
  agent.destroy();
  return { pairs: pairs / ((performance.now() - start) / 1000), failed };
}

if (!isMainThread && (workerData as { pairLoad?: PairLoad })?.pairLoad) {
  parentPort?.postMessage(await putGetPairs((workerData as { pairLoad: PairLoad }).pairLoad));
}

/** Put+get pairs per second, the clients in a worker thread so they do not share the server's event loop. */
async function measurePairs(load: PairLoad): Promise<number> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { pairLoad: load } });
  const result = await new Promise<{ pairs: number; failed: number }>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  await worker.terminate();
  if (result.failed > 0) throw new Error(`${result.failed} put+get pairs failed`);
  return result.pairs;
}

/** `/store/*` over HTTP on Redis (the full server: routing, validation, JSON): 32 concurrent clients. */
export async function run(redisUrl: string): Promise<BenchResult[]> {
  const server = await startBenchServer(redisUrl, "bench-store-api:");
  try {
    await measurePairs({ baseUrl: server.url, durationMs: WARMUP_MS });
    const pairs = await measurePairs({ baseUrl: server.url, durationMs: DURATION_MS });
    const { store } = server.ctx.storage;
    for (let n = 0; n < SEARCH_NAMESPACES; n++) {
      await Promise.all(
        Array.from({ length: ITEMS_PER_NAMESPACE }, (_, i) =>
          store.put(["search", `user-${n}`], `k${i}`, { kind: i % 2 === 0 ? "fact" : "preference", score: i % 10 }),
        ),
      );
    }
    const searches = await measureHttpThroughput({
      url: `${server.url}/store/items/search`,
      method: "POST",
      bodyTemplate: JSON.stringify({ namespace_prefix: ["search", "user-1"], limit: 10 }),
      concurrency: CLIENTS,
      durationMs: DURATION_MS,
    });
    // What a no-op request costs on this machine right now: the ceiling for any endpoint.
    const health = await measureHttpThroughput({
      url: `${server.url}/ok`,
      method: "GET",
      concurrency: CLIENTS,
      durationMs: DURATION_MS,
    });
    const clients = `HTTP, ${CLIENTS} clients`;
    return [
      {
        name: `store API put+get, 2 calls each (${clients})`,
        value: round(pairs * 2, 0),
        unit: "ops/s",
        target: ">= 5000",
      },
      {
        name: `store API search, limit 10 (${clients}, ${ITEMS_PER_NAMESPACE} items/namespace)`,
        value: round(searches, 0),
        unit: "ops/s",
      },
      { name: `GET /ok for comparison (${clients})`, value: round(health, 0), unit: "req/s" },
    ];
  } finally {
    await server.close();
  }
}
