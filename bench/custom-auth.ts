import { Agent, request } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { createClient } from "redis";
import { loadConfig } from "../agent-server/src/config.ts";
import { matchesAuthFilter, normalizeUser, RequestAuth } from "../agent-server/src/custom-auth/authorize.ts";
import { readAuthSettings } from "../agent-server/src/custom-auth/config.ts";
import { loadProjectAuth } from "../agent-server/src/custom-auth/module.ts";
import { lazyRequest } from "../agent-server/src/custom-auth/request.ts";
import { type AgentServer, startAgentServer } from "../agent-server/src/server.ts";
import { percentile, round } from "./support/measure.ts";
import type { BenchResult } from "./types.ts";

/**
 * Custom auth (`langgraph.json` `auth.path`) at scale: 100,000 threads owned by 1,000 users
 * (`metadata.owner`, stamped and filtered by the project's `Auth` as the LangGraph.js guide
 * does), each user searching their own threads from 32 clients, with the Redis keys a search
 * reads (an index-served search reads its index and its page, a scan every thread); and what
 * authenticating plus authorizing adds to a `GET /threads/{id}` against the same server without
 * auth, as server CPU per request (what a busy machine disturbs least) and as throughput.
 */
const SEEDED_THREADS = 100_000;
const USERS = 1000;
const SEED_WINDOW = 500;
const CLIENTS = 32;
const SECONDS = 5;
const ROUNDS = 10;
const ROUND_MS = 1500;
const SETTLE_MS = 2000;

const median = (values: number[]) => percentile(values, 50);

/** One measured window of `GET /threads/{id}` against one server. */
interface Round {
  perSecond: number;
  cpuMicros: number;
}

const project = join(dirname(fileURLToPath(import.meta.url)), "support/custom-auth-project");

interface Load {
  /** Request `n` goes to `paths[n % paths.length]` with `tokens[n % tokens.length]` (none when empty). */
  url: string;
  paths: string[];
  tokens: string[];
  method: "GET" | "POST";
  body?: string;
  concurrency: number;
  durationMs: number;
}

interface LoadResult {
  latencies: number[];
  seconds: number;
  failed: number;
  firstError?: string;
}

/** Keys Redis looked up so far (hits and misses): what searches read, whatever the commands. */
async function keysRead(redisUrl: string): Promise<number> {
  const client = createClient({ url: redisUrl });
  await client.connect();
  try {
    const info = await client.info("stats");
    const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, "m").exec(info)?.[1] ?? Number.NaN);
    return field("keyspace_hits") + field("keyspace_misses");
  } finally {
    await client.close();
  }
}

/** The client loops, in a worker thread so they do not compete with the server for its event loop. */
async function generate(load: Load): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: load.concurrency });
  const latencies: number[] = [];
  let failed = 0;
  let firstError: string | undefined;
  let sequence = 0;
  const start = performance.now();
  const deadline = start + load.durationMs;
  const send = (n: number) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const token = load.tokens.length > 0 ? load.tokens[n % load.tokens.length] : undefined;
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (token) headers.authorization = `Bearer ${token}`;
      const req = request(
        `${load.url}${load.paths[n % load.paths.length]}`,
        { method: load.method, agent, headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(load.body);
    });
  await Promise.all(
    Array.from({ length: load.concurrency }, async () => {
      while (performance.now() < deadline) {
        const sent = performance.now();
        const { status, text } = await send(sequence++);
        if (status >= 200 && status < 300) latencies.push(performance.now() - sent);
        else {
          failed++;
          firstError ??= `${status} ${text}`;
        }
      }
    }),
  );
  agent.destroy();
  return { latencies, seconds: (performance.now() - start) / 1000, failed, firstError };
}

if (!isMainThread && (workerData as { customAuthLoad?: Load })?.customAuthLoad) {
  parentPort?.postMessage(await generate((workerData as { customAuthLoad: Load }).customAuthLoad));
}

async function measure(load: Load): Promise<LoadResult> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { customAuthLoad: load } });
  const result = await new Promise<LoadResult>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  await worker.terminate();
  if (result.failed > 0) throw new Error(`${result.failed} requests failed, first: ${result.firstError}`);
  return result;
}

async function startServer(redisUrl: string, prefix: string, config: string): Promise<AgentServer> {
  return startAgentServer(
    loadConfig(["serve", "--config", join(project, config), "--port", "0", "--host", "127.0.0.1"], {
      REDIS_URI: redisUrl,
      REDIS_PREFIX: prefix,
      LOG_LEVEL: "silent",
      N_WORKERS: "0",
    }),
  );
}

const userOf = (i: number) => `user-${i % USERS}`;

/**
 * What the server does per request under custom auth, without HTTP: the Request handed to
 * `authenticate` (as `authenticateRequest` builds it), the user, the `threads:read` handler and the filter check. A figure a busy machine
 * disturbs less than the HTTP comparison.
 */
async function inProcessCost(): Promise<BenchResult> {
  const loaded = await loadProjectAuth(readAuthSettings(join(project, "langgraph.json")));
  if (!loaded) throw new Error("the bench project has no auth");
  const authenticate = loaded.auth["~handlerCache"].authenticate as (request: Request) => unknown;
  const calls = 50_000;
  const start = performance.now();
  for (let i = 0; i < calls; i++) {
    const headers = new Headers({ host: "127.0.0.1", authorization: `Bearer ${userOf(i)}`, accept: "*/*" });
    const request = lazyRequest("GET", `http://127.0.0.1/threads/${i}`, headers);
    const auth = new RequestAuth(normalizeUser(await authenticate(request)), loaded.auth);
    matchesAuthFilter({ owner: userOf(i) }, await auth.authorize("threads:read", { thread_id: String(i) }));
  }
  const micros = ((performance.now() - start) / calls) * 1000;
  await loaded.loader.close();
  return { name: "custom auth: authenticate + authorize in process, per request", value: round(micros, 1), unit: "µs" };
}

export async function run(redisUrl: string): Promise<BenchResult[]> {
  // Both servers share one prefix: the same threads, read with and without custom auth.
  const prefix = "bench-custom-auth:";
  const withAuth = await startServer(redisUrl, prefix, "langgraph.json");
  let threadIds: string[] = [];
  const results: BenchResult[] = [];
  try {
    const { threads } = withAuth.ctx.storage;
    threadIds = new Array(SEEDED_THREADS);
    for (let start = 0; start < SEEDED_THREADS; start += SEED_WINDOW) {
      await Promise.all(
        Array.from({ length: Math.min(SEED_WINDOW, SEEDED_THREADS - start) }, async (_, k) => {
          const i = start + k;
          const thread = await threads.create({ metadata: { owner: userOf(i), n: i } });
          threadIds[i] = thread.thread_id;
        }),
      );
    }
    const users = Array.from({ length: USERS }, (_, i) => userOf(i));
    const searchLoad = (durationMs: number) =>
      measure({
        url: withAuth.url,
        paths: ["/threads/search"],
        tokens: users,
        method: "POST",
        body: JSON.stringify({ limit: 10 }),
        concurrency: CLIENTS,
        durationMs,
      });
    // Let the server and Redis finish what seeding left behind (GC, dict rehashing), then warm up
    // the search path, as the GET rounds below are warmed up.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    await searchLoad(1000);
    const searchKeys = await keysRead(redisUrl);
    const searchCpu = process.threadCpuUsage();
    const search = await searchLoad(SECONDS * 1000);
    const { user, system } = process.threadCpuUsage(searchCpu);
    const cpuPerSearch = (user + system) / search.latencies.length;
    const keysPerSearch = ((await keysRead(redisUrl)) - searchKeys) / search.latencies.length;
    const countKeys = await keysRead(redisUrl);
    const count = await measure({
      url: withAuth.url,
      paths: ["/threads/count"],
      tokens: users,
      method: "POST",
      body: "{}",
      concurrency: CLIENTS,
      durationMs: 1000,
    });
    const keysPerCount = ((await keysRead(redisUrl)) - countKeys) / count.latencies.length;
    results.push(
      {
        name: `custom auth: own threads/search p50 (100k threads, 1k users, ${CLIENTS} clients)`,
        value: round(percentile(search.latencies, 50), 2),
        unit: "ms",
      },
      {
        name: `custom auth: own threads/search p99 (100k threads, 1k users, ${CLIENTS} clients)`,
        value: round(percentile(search.latencies, 99), 2),
        unit: "ms",
        target: "<= 20",
      },
      { name: "custom auth: server CPU per own threads/search", value: round(cpuPerSearch, 0), unit: "µs" },
      {
        name: "custom auth: Redis keys read per own threads/search (limit 10)",
        value: round(keysPerSearch, 1),
        unit: "keys",
      },
      { name: "custom auth: Redis keys read per own threads/count", value: round(keysPerCount, 1), unit: "keys" },
    );
  } finally {
    await withAuth.close();
  }

  // GET /threads/{id} of the caller's own threads, with auth and without: both servers up at once and
  // measured in alternating rounds, so a busy machine slows both alike; the median round of each.
  // Both servers run on this thread and the clients on a worker, so this thread's CPU time per
  // request is the servers' cost, which other processes on the machine barely change.
  const sample = Array.from({ length: 2000 }, (_, k) => k * 37);
  const plainServer = await startServer(redisUrl, prefix, "langgraph.no-auth.json");
  const authServer = await startServer(redisUrl, prefix, "langgraph.json");
  const rounds = { plain: [] as Round[], auth: [] as Round[] };
  try {
    const roundOf = async (server: AgentServer, tokens: string[], durationMs: number): Promise<Round> => {
      const cpu = process.threadCpuUsage();
      const measured = await measure({
        url: server.url,
        paths: sample.map((i) => `/threads/${threadIds[i]}`),
        tokens,
        method: "GET",
        concurrency: CLIENTS,
        durationMs,
      });
      const { user, system } = process.threadCpuUsage(cpu);
      const requests = measured.latencies.length;
      return { perSecond: requests / measured.seconds, cpuMicros: (user + system) / requests };
    };
    const owners = sample.map((i) => userOf(i));
    await roundOf(plainServer, [], 1000);
    await roundOf(authServer, owners, 1000);
    // Which one goes first alternates, so a machine speeding up or slowing down favours neither.
    for (let i = 0; i < ROUNDS; i++) {
      const plainRound = () => roundOf(plainServer, [], ROUND_MS);
      const authRound = () => roundOf(authServer, owners, ROUND_MS);
      if (i % 2 === 0) {
        rounds.plain.push(await plainRound());
        rounds.auth.push(await authRound());
      } else {
        rounds.auth.push(await authRound());
        rounds.plain.push(await plainRound());
      }
    }
  } finally {
    await Promise.all([plainServer.close(), authServer.close()]);
  }
  results.push(await inProcessCost());
  const cpu = {
    plain: median(rounds.plain.map((r) => r.cpuMicros)),
    auth: median(rounds.auth.map((r) => r.cpuMicros)),
  };
  const rate = {
    plain: median(rounds.plain.map((r) => r.perSecond)),
    auth: median(rounds.auth.map((r) => r.perSecond)),
  };
  // Each ratio is the median of the rounds' own ratios: the two windows of a round saw the same machine.
  const ratio = (of: (plain: Round, auth: Round) => number) =>
    median(rounds.plain.map((plain, i) => of(plain, rounds.auth[i] as Round)));
  results.push(
    { name: "GET /threads/{id} without auth: server CPU per request", value: round(cpu.plain, 0), unit: "µs" },
    { name: "GET /threads/{id} with custom auth: server CPU per request", value: round(cpu.auth, 0), unit: "µs" },
    {
      name: "custom auth overhead per GET /threads/{id} (server CPU)",
      value: round((ratio((plain, auth) => auth.cpuMicros / plain.cpuMicros) - 1) * 100, 1),
      unit: "%",
      target: "<= 10",
    },
    { name: `GET /threads/{id} without auth, ${CLIENTS} clients`, value: round(rate.plain, 0), unit: "req/s" },
    { name: `GET /threads/{id} with custom auth, ${CLIENTS} clients`, value: round(rate.auth, 0), unit: "req/s" },
    {
      name: `custom auth overhead per GET /threads/{id} (throughput, ${CLIENTS} clients)`,
      value: round((ratio((plain, auth) => plain.perSecond / auth.perSecond) - 1) * 100, 1),
      unit: "%",
    },
  );
  return results;
}
