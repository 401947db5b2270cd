import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "redis";
import { loadConfig } from "../agent-server/src/config.ts";
import { matchesAuthFilter, normalizeUser, RequestAuth } from "../agent-server/src/custom-auth/authorize.ts";
import { readAuthSettings } from "../agent-server/src/custom-auth/config.ts";
import { loadProjectAuth } from "../agent-server/src/custom-auth/module.ts";
import { lazyRequest } from "../agent-server/src/custom-auth/request.ts";
import { type AgentServer, startAgentServer } from "../agent-server/src/server.ts";
import { percentile, round } from "./support/measure.ts";
import { measureUserLoad } from "./support/user-load.ts";
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
const FEW_CLIENTS = 4;
const SECONDS = 5;
const ROUNDS = 10;
const ROUND_MS = 1500;
const SETTLE_MS = 2000;
/** The search windows, with and without auth in turn, SECONDS in all for each. */
const SEARCH_ROUNDS = 2;

const median = (values: number[]) => percentile(values, 50);

/** One measured window of `GET /threads/{id}` against one server. */
interface Round {
  perSecond: number;
  cpuMicros: number;
}

const project = join(dirname(fileURLToPath(import.meta.url)), "support/custom-auth-project");

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
    // The same searches without auth, the owner as a metadata filter: the same index, no authenticate.
    const plainServer = await startServer(redisUrl, prefix, "langgraph.no-auth.json");
    const searchLoad = (server: AgentServer, durationMs: number, concurrency = CLIENTS) =>
      measureUserLoad({
        url: server.url,
        paths: ["/threads/search"],
        tokens: server === withAuth ? users : [],
        method: "POST",
        bodies:
          server === withAuth
            ? [JSON.stringify({ limit: 10 })]
            : users.map((owner) => JSON.stringify({ metadata: { owner }, limit: 10 })),
        concurrency,
        durationMs,
      });
    const searches = { auth: [] as number[], plain: [] as number[], fewClients: [] as number[] };
    let searchCpuMicros = 0;
    let searchKeys = 0;
    try {
      // Let the server and Redis finish what seeding left behind (GC, dict rehashing), then warm up
      // the search path, as the GET rounds below are warmed up.
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      await searchLoad(withAuth, 1000);
      await searchLoad(plainServer, 1000);
      for (let i = 0; i < SEARCH_ROUNDS; i++) {
        const keys = await keysRead(redisUrl);
        const cpu = process.threadCpuUsage();
        const { latencies } = await searchLoad(withAuth, (SECONDS * 1000) / SEARCH_ROUNDS);
        const { user, system } = process.threadCpuUsage(cpu);
        searchCpuMicros += user + system;
        searchKeys += (await keysRead(redisUrl)) - keys;
        searches.auth.push(...latencies);
        searches.plain.push(...(await searchLoad(plainServer, (SECONDS * 1000) / SEARCH_ROUNDS)).latencies);
        searches.fewClients.push(
          ...(await searchLoad(withAuth, (SECONDS * 1000) / SEARCH_ROUNDS, FEW_CLIENTS)).latencies,
        );
      }
    } finally {
      await plainServer.close();
    }
    const countKeys = await keysRead(redisUrl);
    const count = await measureUserLoad({
      url: withAuth.url,
      paths: ["/threads/count"],
      tokens: users,
      method: "POST",
      bodies: ["{}"],
      concurrency: CLIENTS,
      durationMs: 1000,
    });
    const keysPerCount = ((await keysRead(redisUrl)) - countKeys) / count.latencies.length;
    const scale = `100k threads, 1k users, ${CLIENTS} clients`;
    results.push(
      {
        name: `custom auth: own threads/search p50 (${scale})`,
        value: round(percentile(searches.auth, 50), 2),
        unit: "ms",
      },
      {
        name: `custom auth: own threads/search p99 (${scale})`,
        value: round(percentile(searches.auth, 99), 2),
        unit: "ms",
        target: "<= 20",
      },
      {
        name: "  the same search without auth (owner as metadata filter) p50",
        value: round(percentile(searches.plain, 50), 2),
        unit: "ms",
      },
      {
        name: "  the same search without auth (owner as metadata filter) p99",
        value: round(percentile(searches.plain, 99), 2),
        unit: "ms",
      },
      {
        // At 32 closed-loop clients the latency is mostly queueing on this machine's two cores (the
        // clients, Redis and the server share them): the same search with few clients shows the path itself.
        name: `  the same search with custom auth at ${FEW_CLIENTS} clients p99`,
        value: round(percentile(searches.fewClients, 99), 2),
        unit: "ms",
      },
      {
        name: "custom auth: server CPU per own threads/search",
        value: round(searchCpuMicros / searches.auth.length, 0),
        unit: "µs",
      },
      {
        name: "custom auth: Redis keys read per own threads/search (limit 10)",
        value: round(searchKeys / searches.auth.length, 1),
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
      const measured = await measureUserLoad({
        url: server.url,
        paths: sample.map((i) => `/threads/${threadIds[i]}`),
        tokens,
        method: "GET",
        bodies: [],
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
