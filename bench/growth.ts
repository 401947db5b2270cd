import { randomUUID } from "node:crypto";
import { Agent } from "node:http";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createClient } from "redis";
import type { ServerProcess } from "../agent-server/src/runs/testing/process.ts";
import {
  createThread,
  createThreads,
  idleCpu,
  json,
  measurePhase,
  type Phase,
  RUNS_PER_THREAD,
  readLatency,
  runOn,
  THREADS,
  type Tree,
  warmUp,
} from "./support/growth-phases.ts";
import {
  netRatio,
  netRatioInterval,
  type RoundPair,
  reducerCost,
  withoutFullCollection,
} from "./support/growth-ratio.ts";
import { round } from "./support/measure.ts";
import { keyKind, memoryOf, type Redis } from "./support/redis-usage.ts";
import { startMeasuredReference } from "./support/reference-growth.ts";
import { call, median, processCpuSeconds } from "./support/run-load.ts";
import type { BenchResult } from "./types.ts";

/**
 * What one more run costs on a thread that already holds N messages: server CPU, bytes sent to
 * Redis and Redis memory kept per run, and how long state and history reads take. A cost that
 * grows with N makes long conversations slow and expensive; the targets compare N = 1,000 with
 * N = 1. With `GROWTH_BASE=<source tree>` (e.g. a `git worktree` of an older commit) the same
 * figures are measured for that tree's server too, in alternating phases on the same Redis.
 * The CPU target excludes the graph's own work on its input, the stock messages reducer's passes
 * over every earlier message: a second server of this tree runs the example graph with a reducer
 * that only appends (support/appending-reducer-project), in the same alternating phases, and the
 * difference between the two at each N is the stock reducer's cost inside the server. Its growth
 * over N = 1 is subtracted from the server's figure for the "net" rows; the raw rows stay. The
 * target is checked on the upper end of the net ratio's 95% interval over the rounds without a
 * full collection (`netRatioInterval`).
 * With `GROWTH_REFERENCE=1` the reference server (`langgraphjs dev`, in memory) serving the same
 * example project gets the same requests in the same alternating phases; it reports only the CPU
 * of its process tree per run and read latencies (it writes nothing to Redis).
 */

const SIZES = [1, 10, 100, 1000];
/**
 * Phases per size. A full collection costs ~300 ms of the process's CPU in whichever phase it
 * lands: over 10 rounds (60 runs a size) one moved a size's mean by ~5 ms a run, more than a
 * whole run at N = 1, and the mean ratio ranged 1.2 – 2.0× on the same code. Over 40 rounds one
 * moves it by a quarter of that; the phases one lands in are counted, and the ratio without them
 * is printed beside the mean's.
 */
const ROUNDS = 40;
const GROUPS = ROUNDS / RUNS_PER_THREAD;
/** The "built by real runs" conversation: each run adds a question and an answer. */
const CONVERSATION_RUNS = 500;
const here = dirname(fileURLToPath(import.meta.url));
/** The server of this tree whose graph's reducer does not grow with N. */
const APPENDING = "this, appending reducer";

/** The tree's own `spawnServer` and (unless given) example graph, so the server runs that tree's code. */
async function startServer(
  root: string,
  redisUrl: string,
  prefix: string,
  config = join(root, "agent-server/example/langgraph.json"),
): Promise<ServerProcess> {
  const module = pathToFileURL(join(root, "agent-server/src/runs/testing/process.ts")).href;
  const { spawnServer } = (await import(module)) as typeof import("../agent-server/src/runs/testing/process.ts");
  const env = { N_WORKERS: String(THREADS), RUN_LEASE_MS: "15000", RUN_POLL_MS: "1000" };
  return spawnServer(redisUrl, prefix, env, config);
}

/**
 * Memory kept by one conversation built by real runs, against the JSON size of its messages,
 * and by kind of key (bytes per run): a thread of its own prefix, so every key is its.
 */
async function conversation(
  redis: Redis,
  tree: Tree,
  prefix: string,
): Promise<{ keptMiB: number; ratio: number; byKind: Map<string, number> }> {
  const memoryBefore = await memoryOf(redis, prefix);
  const threadId = await createThread(tree, []);
  for (let i = 0; i < CONVERSATION_RUNS; i++) await runOn(tree, threadId);
  const memoryAfter = await memoryOf(redis, prefix);
  const state = (await json(await call(tree.agent, `${tree.url}/threads/${threadId}/state`, "GET"), "state")) as {
    values: { messages: unknown[] };
  };
  const kept = memoryAfter.kept - memoryBefore.kept;
  const byKind = new Map<string, number>();
  for (const [key, bytes] of memoryAfter.byKey) {
    if (memoryBefore.byKey.has(key) || key.startsWith(`${prefix}runs:ev:`)) continue;
    const kind = keyKind(key, prefix);
    byKind.set(kind, (byKind.get(kind) ?? 0) + bytes / CONVERSATION_RUNS);
  }
  return { keptMiB: kept / 2 ** 20, ratio: kept / Buffer.byteLength(JSON.stringify(state.values.messages)), byKind };
}

export async function run(redisUrl: string): Promise<BenchResult[]> {
  const redis: Redis = createClient({ url: redisUrl });
  await redis.connect();
  const thisTree = resolve(here, "..");
  const servers = [
    ...(process.env.GROWTH_BASE ? [["base", resolve(process.env.GROWTH_BASE), undefined] as const] : []),
    ["this", thisTree, undefined] as const,
    [APPENDING, thisTree, join(here, "support/appending-reducer-project/langgraph.json")] as const,
  ];
  const trees: Tree[] = [];
  try {
    for (const [label, root, config] of servers) {
      const prefix = `bench-growth-${randomUUID().slice(0, 8)}:`;
      const server = await startServer(root, redisUrl, prefix, config);
      const cpuSeconds = () => processCpuSeconds(server.pid) ?? Number.NaN;
      const stop = () => server.stop();
      trees.push({
        label,
        url: server.url,
        cpuSeconds,
        idleMsPerSecond: 0,
        stop,
        prefix,
        agent: new Agent({ keepAlive: true }),
        threads: new Map(),
      });
    }
    if (process.env.GROWTH_REFERENCE === "1") {
      const reference = await startMeasuredReference(join(here, "../agent-server/example/langgraph.json"));
      const agent = new Agent({ keepAlive: true });
      trees.push({ label: "reference", ...reference, idleMsPerSecond: 0, agent, threads: new Map() });
    }
    for (const tree of trees) {
      // Before any run: what runs leave behind (packing their checkpoints, collections) is theirs.
      tree.idleMsPerSecond = await idleCpu(tree);
      await warmUp(tree);
      for (const size of SIZES) {
        const groups: string[][] = [];
        for (let group = 0; group < GROUPS; group++) {
          const threads = await createThreads(tree, size);
          // One unmeasured run each: a thread created with `supersteps` keeps its values in its
          // record until its first run (see docs/storage.md), and the figures are those of "one more run".
          await Promise.all(threads.map((threadId) => runOn(tree, threadId)));
          groups.push(threads);
        }
        tree.threads.set(size, groups);
      }
    }
    const phases = new Map<string, Phase[]>();
    for (let round = 0; round < ROUNDS; round++) {
      // Sizes up, then down: no size always follows the largest one's leftover work.
      for (const size of round % 2 === 0 ? SIZES : [...SIZES].reverse()) {
        // Alternate which tree goes first, so none always follows another's load.
        for (const tree of round % 2 === 0 ? trees : [...trees].reverse()) {
          const key = `${tree.label}/${size}`;
          phases.set(key, [...(phases.get(key) ?? []), await measurePhase(redis, tree, size, round)]);
        }
      }
    }
    const phasesOf = (label: string, size: number) => phases.get(`${label}/${size}`) ?? [];
    const reducerAt = (size: number) => reducerCost(phasesOf("this", size), phasesOf(APPENDING, size));
    const reducerGrowth = (size: number) => reducerAt(size) - reducerAt(1);
    const results: BenchResult[] = [];
    for (const tree of trees) {
      const perRun = (size: number, pick: (phase: Phase) => number) => {
        const measured = phasesOf(tree.label, size);
        return measured.reduce((sum, phase) => sum + pick(phase), 0) / measured.reduce((n, p) => n + p.runs, 0);
      };
      const medianPerRun = (size: number) =>
        median(phasesOf(tree.label, size).map((phase) => phase.cpuMs / phase.runs));
      const name = (what: string) => `growth (${tree.label}): ${what}`;
      if (tree.label === APPENDING) {
        for (const size of SIZES) {
          results.push({
            name: name(`server CPU per run, N=${size}`),
            value: round(
              perRun(size, (p) => p.cpuMs),
              2,
            ),
            unit: "ms",
          });
        }
        continue;
      }
      for (const size of SIZES) {
        const threads = tree.threads.get(size)?.[0] ?? [];
        const state = await readLatency(tree, (id) => `/threads/${id}/state`, threads);
        const history = await readLatency(tree, (id) => `/threads/${id}/history?limit=10`, threads);
        const at = `N=${size}`;
        const cpu = perRun(size, (p) => p.cpuMs);
        const latencies: BenchResult[] = [
          { name: name(`state read latency p50, ${at}`), value: round(state.p50, 2), unit: "ms" },
          { name: name(`state read, server CPU per read, ${at}`), value: round(state.serverCpuMs, 2), unit: "ms" },
          { name: name(`history read (10) latency p50, ${at}`), value: round(history.p50, 2), unit: "ms" },
          {
            name: name(`history read (10), server CPU per read, ${at}`),
            value: round(history.serverCpuMs, 2),
            unit: "ms",
          },
        ];
        // The reference: only its CPU and reads (its state is in memory, and its graph is not ours to net out).
        if (tree.prefix === undefined) {
          results.push({ name: name(`server CPU per run, ${at}`), value: round(cpu, 2), unit: "ms" }, ...latencies);
          continue;
        }
        results.push(
          { name: name(`server CPU per run, ${at}`), value: round(cpu, 2), unit: "ms" },
          {
            name: name(`the stock messages reducer's CPU per run in the server, ${at}`),
            value: round(reducerAt(size), 2),
            unit: "ms",
          },
          {
            name: name(`server CPU per run net of the reducer's growth, ${at}`),
            value: round(cpu - reducerGrowth(size), 2),
            unit: "ms",
          },
          {
            name: name(`Redis bytes written per run, ${at}`),
            value: round(perRun(size, (p) => p.bytesIn) / 1024, 1),
            unit: "KiB",
          },
          {
            name: name(`Redis memory kept per run, ${at}`),
            value: round(perRun(size, (p) => p.keptBytes) / 1024, 1),
            unit: "KiB",
          },
          {
            name: name(`Redis memory of event logs per run (expire), ${at}`),
            value: round(perRun(size, (p) => p.eventLogBytes) / 1024, 1),
            unit: "KiB",
          },
          {
            name: name(`full collections in its phases (${ROUNDS * THREADS} runs), ${at}`),
            value: phasesOf(tree.label, size).reduce((sum, phase) => sum + phase.fullCollections, 0),
            unit: "collections",
          },
          ...latencies,
        );
      }
      results.push({
        name: name("server CPU while idle, taken out of each phase"),
        value: round(tree.idleMsPerSecond, 1),
        unit: "ms/s",
      });
      const ratio = (pick: (phase: Phase) => number) => round(perRun(1000, pick) / perRun(1, pick), 2);
      results.push({ name: name("CPU per run (raw), N=1000 / N=1"), value: ratio((p) => p.cpuMs), unit: "x" });
      if (tree.prefix === undefined) continue;
      const rounds: RoundPair[] = Array.from({ length: ROUNDS }, (_, index) => {
        const pair = (label: string) => [phasesOf(label, 1)[index], phasesOf(label, 1000)[index]] as [Phase, Phase];
        return { tree: pair(tree.label), stock: pair("this"), appending: pair(APPENDING) };
      });
      const interval = netRatioInterval(rounds);
      const settled = rounds.filter(withoutFullCollection);
      results.push(
        {
          name: name("CPU per run net of the reducer's growth, N=1000 / N=1"),
          value: round(netRatio(rounds), 2),
          unit: "x",
        },
        {
          name: name(`rounds without a full collection in any phase (of ${ROUNDS})`),
          value: settled.length,
          unit: "rounds",
        },
        {
          name: name("the same ratio from those rounds"),
          value: round(netRatio(settled), 2),
          unit: "x",
        },
        { name: name("that ratio's 95% interval (rounds resampled), low"), value: round(interval.low, 2), unit: "x" },
        {
          name: name("that ratio's 95% interval (rounds resampled), high"),
          value: round(interval.high, 2),
          unit: "x",
          target: "<= 1.5",
        },
        {
          // Robust to a full collection landing in a phase, and blind to the collections' cost.
          name: name("the same from the median phase of each N"),
          value: round((medianPerRun(1000) - reducerGrowth(1000)) / medianPerRun(1), 2),
          unit: "x",
        },
        {
          name: name("bytes written per run, N=1000 / N=1"),
          value: ratio((p) => p.bytesIn),
          unit: "x",
          target: "<= 3",
        },
        {
          name: name("memory kept per run, N=1000 / N=1"),
          value: ratio((p) => p.keptBytes),
          unit: "x",
          target: "<= 3",
        },
      );
    }
    for (const tree of trees) {
      if (tree.prefix === undefined || tree.label === APPENDING) continue;
      const built = await conversation(redis, tree, tree.prefix);
      const name = (what: string) => `growth (${tree.label}): ${what}`;
      results.push(
        {
          name: name(`memory kept by a conversation of ${CONVERSATION_RUNS} runs (without event logs)`),
          value: round(built.keptMiB, 2),
          unit: "MiB",
        },
        {
          name: name("that memory / JSON size of its messages"),
          value: round(built.ratio, 2),
          unit: "x",
          target: "<= 3",
        },
      );
      // Largest first; kinds under 16 bytes a run (the thread's own record and indexes) together.
      const kinds = [...built.byKind].sort((a, b) => b[1] - a[1]);
      const rest = kinds.filter(([, bytes]) => bytes < 16).reduce((sum, [, bytes]) => sum + bytes, 0);
      for (const [kind, bytes] of kinds.filter(([, perRun]) => perRun >= 16)) {
        results.push({ name: name(`that memory per run: ${kind}`), value: Math.round(bytes), unit: "B" });
      }
      results.push({ name: name("that memory per run: other keys"), value: Math.round(rest), unit: "B" });
    }
    return results;
  } finally {
    for (const tree of trees) tree.agent.destroy();
    await Promise.all(trees.map((tree) => tree.stop()));
    await redis.close();
  }
}
