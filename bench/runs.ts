import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { Agent, request } from "node:http";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { type ServerProcess, spawnServer } from "../agent-server/src/runs/testing/process.ts";
import { referenceCliPath, startReferenceServer } from "../testing/reference-server.ts";
import { percentile, round } from "./support/measure.ts";
import { call, input, load, measureServerWindow, median, redisCpuSeconds, statefulCycle } from "./support/run-load.ts";
import type { BenchResult } from "./types.ts";

const CLIENTS = 32;
const SECONDS = 10;
/**
 * The server and the two ceilings are measured in alternating windows, and each ratio is the
 * median of the ratios within a round: this machine's speed drifts by half over minutes, so
 * figures measured minutes apart compare the machine's moods as much as the code.
 */
const ROUNDS = 4;
const WINDOW_SECONDS = SECONDS / ROUNDS;
/**
 * Load before measuring: a fresh server process keeps getting faster for about 20 s under load
 * (V8 optimises LangGraph's, LangChain's and the server's code as they get hot), ours and the
 * reference server alike. The in-process ceiling has no server code to warm up.
 */
const SERVER_WARMUP_SECONDS = 20;
const CEILING_WARMUP_SECONDS = 5;
const FIRST_EVENT_SAMPLES = 100;
const exampleProject = join(dirname(fileURLToPath(import.meta.url)), "../agent-server/example/langgraph.json");

interface Ceiling {
  perSecond: number;
  cpuMsPerRun: number;
}

interface CeilingProcess {
  measure(seconds: number): Promise<Ceiling>;
  stop(): Promise<void>;
}

/**
 * The ceiling: the same graph invoked in a process of its own with an in-memory checkpointer, no
 * server (`support/in-process-ceiling.ts`), warmed up and measuring a window on request, with its
 * CPU time per run, which unlike throughput does not depend on how busy the machine is.
 * `pooled`: with the server's pooled `getRandomValues`.
 */
async function startCeiling(pooled: boolean): Promise<CeilingProcess> {
  const script = join(dirname(fileURLToPath(import.meta.url)), "support/in-process-ceiling.ts");
  const args = [String(CLIENTS), String(CEILING_WARMUP_SECONDS), ...(pooled ? ["--pooled"] : [])];
  const child = spawn(process.execPath, ["--conditions=source", script, ...args], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const nextLine = async () => {
    const line = await lines.next();
    if (line.done) throw new Error("the in-process ceiling exited");
    return line.value;
  };
  if ((await nextLine()) !== "ready") throw new Error("the in-process ceiling did not start");
  return {
    measure: async (seconds) => {
      child.stdin.write(`${seconds}\n`);
      return JSON.parse(await nextLine()) as Ceiling;
    },
    stop: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

/** One round of alternating windows: each ceiling, then the server under the same load. */
interface Round {
  plain: Ceiling;
  pooled: Ceiling;
  server: Ceiling;
}

async function timeToFirstEvent(url: string, agent: Agent): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < FIRST_EVENT_SAMPLES; i++) {
    const thread = JSON.parse((await call(agent, `${url}/threads`, "POST", {})).text) as { thread_id: string };
    const began = performance.now();
    await new Promise<void>((resolve, reject) => {
      const req = request(
        `${url}/threads/${thread.thread_id}/runs/stream`,
        { method: "POST", agent, headers: { "content-type": "application/json" } },
        (res) => {
          let first = true;
          res.on("data", () => {
            if (first) samples.push(performance.now() - began);
            first = false;
          });
          res.on("end", resolve);
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(JSON.stringify({ assistant_id: "agent", input }));
    });
  }
  return samples;
}

/** The reference server on the same graph under the same load, when it is installed; else undefined. */
async function referenceRunsPerSecond(agent: Agent): Promise<number | undefined> {
  const cli = referenceCliPath();
  if (!cli) {
    console.error("bench: runs: reference server not installed (set AGENTPLANE_REFERENCE_CLI), comparison skipped");
    return undefined;
  }
  const server = await startReferenceServer(cli, exampleProject);
  try {
    await load(CLIENTS, SERVER_WARMUP_SECONDS, statefulCycle([server.url], agent, []));
    return (await load(CLIENTS, SECONDS, statefulCycle([server.url], agent, []))).perSecond;
  } finally {
    await server.stop();
  }
}

// One worker per client: every run can start the moment it is created.
const serverEnv = {
  N_WORKERS: String(CLIENTS),
  RUN_LEASE_MS: "15000",
  RUN_POLL_MS: "1000",
  STREAM_HEARTBEAT_MS: "5000",
};

export async function run(redisUrl: string): Promise<BenchResult[]> {
  const prefix = `bench-runs-${randomUUID().slice(0, 8)}:`;
  const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS * 2 });
  const servers: ServerProcess[] = [];
  const ceilings: CeilingProcess[] = [];
  try {
    const plainCeiling = await startCeiling(false);
    ceilings.push(plainCeiling);
    const pooledCeiling = await startCeiling(true);
    ceilings.push(pooledCeiling);
    servers.push(await spawnServer(redisUrl, prefix, serverEnv, exampleProject));
    const one = [servers[0]?.url as string];
    await load(CLIENTS, SERVER_WARMUP_SECONDS, statefulCycle(one, agent, []));
    const server = servers[0] as ServerProcess;
    const measureServer = (seconds: number, latencies?: number[]) =>
      measureServerWindow(server, agent, CLIENTS, seconds, latencies);
    // Throughput, CPU and latency under steady load…
    // …with what the bench's own clients and Redis spend beside the server on the same cores.
    const runLatencies: number[] = [];
    const clientCpuBefore = process.cpuUsage();
    const redisCpuBefore = await redisCpuSeconds(redisUrl);
    const single = await measureServer(SECONDS, runLatencies);
    const redisCpuMsPerRun = (((await redisCpuSeconds(redisUrl)) - redisCpuBefore) * 1000) / single.runs;
    const { user, system } = process.cpuUsage(clientCpuBefore);
    const clientCpuMsPerRun = (user + system) / 1000 / single.runs;
    // …and the ratios to the ceilings from alternating windows.
    const rounds: Round[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const plain = await plainCeiling.measure(WINDOW_SECONDS);
      const pooled = await pooledCeiling.measure(WINDOW_SECONDS);
      // Unmeasured load first: the server was idle during the ceilings' windows.
      await load(CLIENTS, 1, statefulCycle(one, agent, []));
      const window = await measureServer(WINDOW_SECONDS);
      single.failed += window.failed;
      rounds.push({ plain, pooled, server: window });
    }
    await Promise.all(ceilings.splice(0).map((ceiling) => ceiling.stop()));
    const of = (pick: (round: Round) => number) => median(rounds.map(pick));
    const stateless = await load(
      CLIENTS,
      SECONDS,
      async () => (await call(agent, `${one[0]}/runs/wait`, "POST", { assistant_id: "agent", input })).status === 200,
    );
    const firstEvent = await timeToFirstEvent(one[0] as string, agent);

    servers.push(await spawnServer(redisUrl, prefix, serverEnv, exampleProject));
    const both = servers.map((server) => server.url);
    await load(CLIENTS, SERVER_WARMUP_SECONDS, statefulCycle(both, agent, []));
    const double = await load(CLIENTS, SECONDS, statefulCycle(both, agent, []));

    const reference = await referenceRunsPerSecond(agent);
    const failed = single.failed + stateless.failed + double.failed;
    const referenceRows: BenchResult[] =
      reference === undefined
        ? []
        : [
            { name: "runs: reference server (langgraphjs dev), same cycle", value: round(reference), unit: "runs/s" },
            {
              name: "runs: 1 process / reference server",
              value: round(single.perSecond / reference, 1),
              unit: "x",
              target: ">= 5",
            },
          ];
    const ratio = (pick: (round: Round) => number) => round(of(pick) * 100);
    return [
      ...referenceRows,
      // Targets compare with the ceiling that has the server's pooled getRandomValues: the same
      // LangGraph code path, and steadier here than plain LangGraph.js (whose per-UUID platform
      // calls swing with the machine), which is printed beside it.
      {
        name: "runs: in-process ceiling (graph.invoke, MemorySaver)",
        value: round(of((r) => r.plain.perSecond)),
        unit: "runs/s",
      },
      {
        name: "runs: in-process ceiling, pooled getRandomValues (as in the server)",
        value: round(of((r) => r.pooled.perSecond)),
        unit: "runs/s",
      },
      { name: "runs: create thread + run/wait, 32 clients, 1 process", value: round(single.perSecond), unit: "runs/s" },
      {
        name: "runs: 1 process / in-process ceiling (pooled getRandomValues)",
        value: ratio((r) => r.server.perSecond / r.pooled.perSecond),
        unit: "%",
        target: ">= 60",
      },
      {
        name: "runs: 1 process / plain in-process ceiling",
        value: ratio((r) => r.server.perSecond / r.plain.perSecond),
        unit: "%",
      },
      {
        name: "runs: CPU per run, in-process ceiling",
        value: round(
          of((r) => r.plain.cpuMsPerRun),
          2,
        ),
        unit: "ms",
      },
      {
        name: "runs: CPU per run, in-process ceiling with pooled getRandomValues",
        value: round(
          of((r) => r.pooled.cpuMsPerRun),
          2,
        ),
        unit: "ms",
      },
      {
        name: "runs: CPU per run, server process (thread + run/wait)",
        value: round(single.cpuMsPerRun, 2),
        unit: "ms",
      },
      { name: "runs: CPU per run, bench clients (same cores)", value: round(clientCpuMsPerRun, 2), unit: "ms" },
      { name: "runs: CPU per run, Redis (same cores)", value: round(redisCpuMsPerRun, 2), unit: "ms" },
      {
        name: "runs: CPU efficiency vs in-process ceiling (pooled getRandomValues)",
        value: ratio((r) => r.pooled.cpuMsPerRun / r.server.cpuMsPerRun),
        unit: "%",
        target: ">= 60",
      },
      {
        name: "runs: CPU efficiency vs plain in-process ceiling",
        value: ratio((r) => r.plain.cpuMsPerRun / r.server.cpuMsPerRun),
        unit: "%",
      },
      { name: "runs: run/wait latency p50 (32 clients)", value: round(percentile(runLatencies, 50)), unit: "ms" },
      {
        name: "runs: run/wait latency p99 (32 clients)",
        value: round(percentile(runLatencies, 99)),
        unit: "ms",
        target: "<= 50",
      },
      { name: "runs: stateless runs/wait, 32 clients", value: round(stateless.perSecond), unit: "runs/s" },
      { name: "runs: time to first SSE event p50", value: round(percentile(firstEvent, 50)), unit: "ms" },
      { name: "runs: time to first SSE event p99", value: round(percentile(firstEvent, 99)), unit: "ms" },
      { name: "runs: create thread + run/wait, 2 processes", value: round(double.perSecond), unit: "runs/s" },
      {
        name: "runs: 2 processes / 1 process",
        value: round(double.perSecond / single.perSecond, 2),
        unit: "x",
      },
      { name: "runs: failed requests", value: failed, unit: "requests", target: "<= 0" },
    ];
  } finally {
    agent.destroy();
    await Promise.all([...servers, ...ceilings].map((process) => process.stop()));
  }
}
