import { RedisStore } from "../agent-server/src/long-term-store/redis-store.ts";
import { connectRedis } from "../agent-server/src/storage/redis-client.ts";
import { measureLatencies, measureThroughput, percentile, round } from "./support/measure.ts";
import type { BenchResult } from "./types.ts";

const CLIENTS = 32;
const DURATION_MS = 3_000;
const WARMUP_MS = 500;
const SEARCH_NAMESPACES = 32;
const ITEMS_PER_NAMESPACE = 200;
const PREFIX = "bench-store:";
/** Semantic search: one namespace of items with vectors the size of OpenAI's text-embedding-3-small. */
const SEMANTIC_ITEMS = 1000;
const SEMANTIC_DIMS = 1536;
const SEMANTIC_SAMPLES = 20;

/** A stand-in embedding model (no network here): a deterministic pseudo-random vector per text. */
function pseudoEmbedding(text: string): number[] {
  let seed = 2166136261;
  for (let i = 0; i < text.length; i++) seed = Math.imul(seed ^ text.charCodeAt(i), 16777619);
  return Array.from({ length: SEMANTIC_DIMS }, () => {
    seed = Math.imul(seed, 1664525) + 1013904223;
    return (seed >>> 0) / 2 ** 32 - 0.5;
  });
}

const pseudoEmbeddings = {
  embedDocuments: async (texts: string[]) => texts.map(pseudoEmbedding),
  embedQuery: async (text: string) => pseudoEmbedding(text),
};

const memory = (i: number) => ({
  text: `user said thing number ${i}`,
  kind: i % 2 === 0 ? "fact" : "preference",
  score: i % 10,
});

/** Long-term store on Redis: item writes, reads and namespace searches from 32 concurrent clients. */
export async function run(redisUrl: string): Promise<BenchResult[]> {
  const client = await connectRedis(redisUrl);
  const store = new RedisStore(client, { prefix: PREFIX });
  try {
    const put = (worker: number, i: number) => store.put(["bench", `user-${worker}`], `k${i % 500}`, memory(i));
    await measureThroughput(CLIENTS, WARMUP_MS, put);
    const puts = await measureThroughput(CLIENTS, DURATION_MS, put);
    const gets = await measureThroughput(CLIENTS, DURATION_MS, (worker, i) =>
      store.get(["bench", `user-${worker}`], `k${i % 500}`),
    );
    const pairs = await measureThroughput(CLIENTS, DURATION_MS, async (worker, i) => {
      await store.put(["pair", `user-${worker}`], `k${i % 500}`, memory(i));
      await store.get(["pair", `user-${worker}`], `k${i % 500}`);
    });
    for (let n = 0; n < SEARCH_NAMESPACES; n++) {
      await Promise.all(
        Array.from({ length: ITEMS_PER_NAMESPACE }, (_, i) => store.put(["search", `user-${n}`], `k${i}`, memory(i))),
      );
    }
    const searches = await measureThroughput(CLIENTS, DURATION_MS, (worker) =>
      store.search(["search", `user-${worker % SEARCH_NAMESPACES}`], { limit: 10 }),
    );
    const filtered = await measureThroughput(CLIENTS, DURATION_MS, (worker) =>
      store.search(["search", `user-${worker % SEARCH_NAMESPACES}`], {
        filter: { kind: "fact", score: { $gte: 8 } },
        limit: 10,
      }),
    );
    const indexed = new RedisStore(client, {
      prefix: PREFIX,
      index: { dims: SEMANTIC_DIMS, embeddings: pseudoEmbeddings, fields: ["text"] },
    });
    for (let start = 0; start < SEMANTIC_ITEMS; start += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, i) => indexed.put(["semantic"], `k${start + i}`, memory(start + i))),
      );
    }
    const semantic = await measureLatencies(
      SEMANTIC_SAMPLES,
      (i) => indexed.search(["semantic"], { query: `what did the user say ${i}`, limit: 10 }),
      3,
    );
    const clients = `${CLIENTS} clients`;
    const perNamespace = `${ITEMS_PER_NAMESPACE} items/namespace`;
    return [
      { name: `store put (${clients})`, value: round(puts, 0), unit: "ops/s", target: ">= 5000" },
      { name: `store get (${clients})`, value: round(gets, 0), unit: "ops/s", target: ">= 5000" },
      {
        name: `store put+get, 2 calls each (${clients})`,
        value: round(pairs * 2, 0),
        unit: "ops/s",
        target: ">= 5000",
      },
      { name: `store search, limit 10 (${clients}, ${perNamespace})`, value: round(searches, 0), unit: "ops/s" },
      {
        name: `store search, filter + limit 10 (${clients}, ${perNamespace})`,
        value: round(filtered, 0),
        unit: "ops/s",
      },
      {
        name: `store semantic search p50, limit 10 (${SEMANTIC_ITEMS} items, ${SEMANTIC_DIMS} dims, exact scan)`,
        value: round(percentile(semantic, 50), 1),
        unit: "ms",
      },
    ];
  } finally {
    for await (const keys of client.scanIterator({ MATCH: `${PREFIX}*`, COUNT: 1000 })) {
      if (keys.length > 0) await client.unlink(keys);
    }
    await client.quit();
  }
}
