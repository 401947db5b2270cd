import type { Agent } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { bytesIn, memoryOf, type Redis } from "./redis-usage.ts";
import { call, input, median } from "./run-load.ts";

/**
 * The growth area's servers ("trees") and how it measures them: warming up, idle CPU, and a
 * phase (one run on each thread of a group of one size, with what it cost the server and Redis).
 */

/** Threads per phase; each gets one run, all at once. */
export const THREADS = 6;
/**
 * Runs a thread gets in the phases. A thread grows by two messages a run, and its scope packs
 * older checkpoints into a segment at 60 of them (20 runs): each size's threads take turns in
 * groups of `THREADS`, so N = 1 stays within 21 and no size's memory figure includes a pack.
 */
export const RUNS_PER_THREAD = 10;
/**
 * A phase's CPU is read this long after its last answer: work a run leaves behind (garbage
 * collection, writes after the answer) then counts in its own phase, not in the next size's.
 */
const SETTLE_MS = 150;
/**
 * A phase lasts ~200 ms, mostly `SETTLE_MS`, and a server doing nothing uses CPU too (~3 ms a
 * second: Redis watchdog pings, the queue poll, timers; 6 – 10 ms while the event-loop monitor
 * sampled every 10 ms): left in, it added ~0.1 – 0.3 ms to every run, the same
 * at every N, and made the ratios look smaller. It is measured over this long after the server
 * starts, before any run, and taken out of each phase for its duration.
 */
const IDLE_MS = 5000;
/**
 * Unmeasured rounds before the phases, each one run on six short and six long threads: a run
 * at N = 1 costs ~3 ms over the first 300 runs of a server and ~1.5 ms after 1,500, as V8
 * optimises the code of the run's path; the long threads' per-message code is hot within a
 * few runs. With too short a warm-up the optimising landed in N = 1's phases and the ratio
 * came out lower than a server in use has it.
 */
const WARMUP_ROUNDS = 150;
const READ_SAMPLES = 30;

export interface Tree {
  label: string;
  url: string;
  /** CPU seconds the server used so far (the reference: its whole process tree). */
  cpuSeconds: () => number;
  /** CPU milliseconds a second it uses doing nothing (queue polling, timers), measured before the phases. */
  idleMsPerSecond: number;
  stop: () => Promise<void>;
  /** Its Redis key prefix; none for the reference, which keeps its state in memory. */
  prefix?: string;
  agent: Agent;
  /** Threads per size, in groups of `THREADS` that take turns. */
  threads: Map<number, string[][]>;
}

export interface Phase {
  runs: number;
  cpuMs: number;
  bytesIn: number;
  keptBytes: number;
  eventLogBytes: number;
  /** Full (mark-compact) collections the server made in the phase; NaN for the reference. */
  fullCollections: number;
}

/** N earlier messages, alternating question and answer, about as long as chat turns are. */
export function earlierMessages(count: number): unknown[] {
  return Array.from({ length: count }, (_, i) =>
    i % 2 === 0
      ? { type: "human", content: `question ${i}: ${"what about this part? ".repeat(4)}`, id: `h${i}` }
      : { type: "ai", content: `answer ${i}: ${"here is what I found. ".repeat(8)}`, id: `a${i}` },
  );
}

export async function json(response: { status: number; text: string }, what: string): Promise<unknown> {
  if (response.status !== 200) throw new Error(`${what} answered ${response.status}: ${response.text}`);
  return JSON.parse(response.text);
}

/** The reference accepts `supersteps` on thread create as well: both servers are seeded this way. */
export async function createThread(tree: Tree, messages: unknown[]): Promise<string> {
  const supersteps = messages.length === 0 ? [] : [{ updates: [{ values: { messages }, as_node: "call_model" }] }];
  const body = { metadata: { graph_id: "agent" }, supersteps };
  const created = await json(await call(tree.agent, `${tree.url}/threads`, "POST", body), "thread create");
  return (created as { thread_id: string }).thread_id;
}

/** `THREADS` new threads of `size` earlier messages each. */
export function createThreads(tree: Tree, size: number): Promise<string[]> {
  const messages = earlierMessages(size);
  return Promise.all(Array.from({ length: THREADS }, () => createThread(tree, messages)));
}

export async function runOn(tree: Tree, threadId: string): Promise<void> {
  const url = `${tree.url}/threads/${threadId}/runs/wait`;
  const answer = await call(tree.agent, url, "POST", { assistant_id: "agent", input });
  if (answer.status !== 200 || !answer.text.includes("how fast")) {
    throw new Error(`run answered ${answer.status}: ${answer.text.slice(0, 200)}`);
  }
}

/** Full collections the server made so far (its `/metrics`), read outside the measured CPU. */
async function fullCollections(tree: Tree): Promise<number> {
  if (tree.prefix === undefined) return Number.NaN;
  const metrics = await call(tree.agent, `${tree.url}/metrics`, "GET");
  // The series appears with the first one.
  return Number(/^agentplane_nodejs_gc_duration_seconds_count\{kind="major"\} (\d+)/m.exec(metrics.text)?.[1] ?? 0);
}

/** The tree's CPU while it serves nothing, in ms a second. */
export async function idleCpu(tree: Tree): Promise<number> {
  await sleep(IDLE_MS);
  const before = tree.cpuSeconds();
  const began = performance.now();
  await sleep(IDLE_MS);
  return ((tree.cpuSeconds() - before) * 1e6) / (performance.now() - began);
}

/** `WARMUP_ROUNDS` on threads of their own: short ones replaced every few rounds, so they stay short. */
export async function warmUp(tree: Tree): Promise<void> {
  const long = await createThreads(tree, 1000);
  let short: string[] = [];
  for (let round = 0; round < WARMUP_ROUNDS; round++) {
    if (round % RUNS_PER_THREAD === 0) short = await createThreads(tree, 1);
    await Promise.all([...short, ...long].map((threadId) => runOn(tree, threadId)));
  }
}

/** One run on each thread of one of the tree's groups of one size, all at once, with what it cost. */
export async function measurePhase(redis: Redis, tree: Tree, size: number, round: number): Promise<Phase> {
  const groups = tree.threads.get(size) ?? [];
  const threads = groups[round % groups.length] ?? [];
  const { prefix } = tree;
  const none = { kept: Number.NaN, eventLogs: Number.NaN };
  const memoryBefore = prefix === undefined ? none : await memoryOf(redis, prefix);
  const bytesBefore = prefix === undefined ? Number.NaN : await bytesIn(redis);
  const collectionsBefore = await fullCollections(tree);
  const cpuBefore = tree.cpuSeconds();
  const began = performance.now();
  await Promise.all(threads.map((threadId) => runOn(tree, threadId)));
  await sleep(SETTLE_MS);
  const cpuAfter = tree.cpuSeconds();
  const idleMs = (tree.idleMsPerSecond * (performance.now() - began)) / 1000;
  const collectionsAfter = await fullCollections(tree);
  const bytesAfter = prefix === undefined ? Number.NaN : await bytesIn(redis);
  const memoryAfter = prefix === undefined ? none : await memoryOf(redis, prefix);
  return {
    runs: threads.length,
    cpuMs: (cpuAfter - cpuBefore) * 1000 - idleMs,
    bytesIn: bytesAfter - bytesBefore,
    keptBytes: memoryAfter.kept - memoryBefore.kept,
    eventLogBytes: memoryAfter.eventLogs - memoryBefore.eventLogs,
    fullCollections: collectionsAfter - collectionsBefore,
  };
}

/**
 * A read's latency as the client sees it (p50, parsing the answer included) and the server's CPU
 * per read, less what it uses idle: the latency of a long history is mostly the client parsing
 * ~3 MB, which says nothing of the server.
 */
export async function readLatency(
  tree: Tree,
  path: (threadId: string) => string,
  threads: string[],
): Promise<{ p50: number; serverCpuMs: number }> {
  const samples: number[] = [];
  let serverMs = 0;
  for (let i = 0; i < READ_SAMPLES; i++) {
    const threadId = threads[i % threads.length] as string;
    const cpuBefore = tree.cpuSeconds();
    const began = performance.now();
    const answer = await call(tree.agent, `${tree.url}${path(threadId)}`, "GET");
    const took = performance.now() - began;
    serverMs += (tree.cpuSeconds() - cpuBefore) * 1000 - (tree.idleMsPerSecond * took) / 1000;
    await json(answer, "read");
    samples.push(performance.now() - began);
  }
  return { p50: median(samples), serverCpuMs: serverMs / READ_SAMPLES };
}
