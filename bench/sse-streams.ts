import { randomUUID } from "node:crypto";
import { Agent, type ClientRequest, request } from "node:http";
import { inspector, pausedReader, rss } from "../agent-server/src/runs/testing/memory.ts";
import { type ServerProcess, spawnServer } from "../agent-server/src/runs/testing/process.ts";
import { round } from "./support/measure.ts";
import { call, processCpuSeconds } from "./support/run-load.ts";
import type { BenchResult } from "./types.ts";

/**
 * Server memory of SSE streams, against one server process with one worker (the fixture graphs of
 * `agent-server/src/runs/testing`):
 * - `SSE_STREAMS` (default 1,000) clients joined (`GET /threads/{id}/runs/{run}/stream`) to as many
 *   runs queued behind a long run that holds the worker: open streams with nothing to send but
 *   heartbeats. RSS after a full garbage collection, per stream, and the server's CPU while they idle.
 * - 16 clients that join a finished run's 20 MB stream and stop reading: RSS growth (target ≤ 50 MB;
 *   `runs/stream-backpressure.integration.test.ts` asserts it, this reports the figure).
 */

const STREAMS = Number(process.env.SSE_STREAMS ?? 1000);
const OPEN_BATCH = 50;
const IDLE_CPU_SECONDS = 10;
const PAUSED_READERS = 16;
const LARGE_RUN = { count: 20_000, size: 1000 };
/** Long enough for the kernel's buffers to fill and every paused stream to wait (as the test does). */
const PAUSED_SETTLE_MS = 12_000;
const MiB = 2 ** 20;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function createThread(server: ServerProcess, agent: Agent): Promise<string> {
  const created = await call(agent, `${server.url}/threads`, "POST", {});
  if (created.status !== 200) throw new Error(`thread create answered ${created.status}`);
  return (JSON.parse(created.text) as { thread_id: string }).thread_id;
}

/** A run created on a new thread (`POST /threads/{id}/runs`); its join path. */
async function startRun(server: ServerProcess, agent: Agent, body: object): Promise<string> {
  const threadId = await createThread(server, agent);
  const created = await call(agent, `${server.url}/threads/${threadId}/runs`, "POST", body);
  if (created.status !== 200) throw new Error(`run create answered ${created.status}: ${created.text}`);
  return `/threads/${threadId}/runs/${(JSON.parse(created.text) as { run_id: string }).run_id}/stream`;
}

/** A joined stream, open once its headers came; the request, to abort it. */
function join(server: ServerProcess, path: string): Promise<ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = request(`${server.url}${path}`, { agent: false }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`join answered ${res.statusCode}`));
      res.resume();
      resolve(req);
    });
    req.on("error", reject);
    req.end();
  });
}

type Devtools = Awaited<ReturnType<typeof inspector>>;

/** Resident memory after a full garbage collection: what the server holds. */
async function heldBytes(server: ServerProcess, devtools: Devtools): Promise<number> {
  await devtools.collect();
  return rss(server.pid);
}

async function idleStreams(server: ServerProcess, agent: Agent, devtools: Devtools) {
  // The worker executes this one for the whole measurement; the runs after it stay queued.
  await startRun(server, agent, { assistant_id: "steps", input: { steps: 1, delay_ms: 3_600_000 } });
  const paths: string[] = [];
  for (let i = 0; i < STREAMS; i += OPEN_BATCH) {
    const batch = Array.from({ length: Math.min(OPEN_BATCH, STREAMS - i) }, () =>
      startRun(server, agent, { assistant_id: "steps", input: { steps: 1 } }),
    );
    paths.push(...(await Promise.all(batch)));
  }
  // One stream opened and closed first, so what the first join compiles is in the baseline.
  (await join(server, paths[0] as string)).destroy();
  await sleep(1000);
  const before = await heldBytes(server, devtools);
  const streams: ClientRequest[] = [];
  try {
    for (let i = 0; i < paths.length; i += OPEN_BATCH) {
      streams.push(...(await Promise.all(paths.slice(i, i + OPEN_BATCH).map((path) => join(server, path)))));
    }
    await sleep(3000);
    const during = await heldBytes(server, devtools);
    const cpuBefore = processCpuSeconds(server.pid) ?? Number.NaN;
    await sleep(IDLE_CPU_SECONDS * 1000);
    const cpuPercent = (((processCpuSeconds(server.pid) ?? Number.NaN) - cpuBefore) / IDLE_CPU_SECONDS) * 100;
    const open = streams.filter((req) => !req.destroyed && req.socket && !req.socket.destroyed).length;
    return {
      perStreamKib: (during - before) / 1024 / streams.length,
      totalMib: (during - before) / MiB,
      cpuPercent,
      open,
    };
  } finally {
    for (const req of streams) req.destroy();
  }
}

async function pausedReaders(server: ServerProcess, agent: Agent, devtools: Devtools) {
  const threadId = await createThread(server, agent);
  const body = { assistant_id: "chatty", input: LARGE_RUN, stream_mode: ["custom"] };
  const done = await call(agent, `${server.url}/threads/${threadId}/runs/wait`, "POST", body);
  if (done.status !== 200) throw new Error(`large run answered ${done.status}`);
  const runs = JSON.parse((await call(agent, `${server.url}/threads/${threadId}/runs`, "GET")).text) as {
    run_id: string;
  }[];
  const path = `/threads/${threadId}/runs/${runs[0]?.run_id}/stream`;
  // A full read first, so what one stream allocates on its way is in the baseline.
  const streamBytes = (await call(agent, `${server.url}${path}`, "GET")).text.length;
  const before = await heldBytes(server, devtools);
  const readers = await Promise.all(Array.from({ length: PAUSED_READERS }, () => pausedReader(server.url, path)));
  try {
    await sleep(PAUSED_SETTLE_MS);
    return { growthMib: ((await heldBytes(server, devtools)) - before) / MiB, streamMib: streamBytes / MiB };
  } finally {
    for (const socket of readers) socket.destroy();
  }
}

export async function run(redisUrl: string): Promise<BenchResult[]> {
  const server = await spawnServer(redisUrl, `bench-sse-${randomUUID().slice(0, 8)}:`, {
    N_WORKERS: "1",
    LOG_LEVEL: "error",
    STREAM_HEARTBEAT_MS: "5000",
    STREAM_STALL_TIMEOUT_MS: "60000",
    RUN_LEASE_MS: "15000",
    RUN_POLL_MS: "1000",
    NODE_OPTIONS: "--inspect=127.0.0.1:0",
  });
  const agent = new Agent({ keepAlive: true, maxSockets: OPEN_BATCH });
  const devtools = await inspector(server);
  try {
    const paused = await pausedReaders(server, agent, devtools);
    const idle = await idleStreams(server, agent, devtools);
    return [
      {
        name: `sse-streams: server memory per open SSE stream (${idle.open} joined, idle)`,
        value: round(idle.perStreamKib),
        unit: "KiB",
      },
      { name: `sse-streams: server memory of ${idle.open} open SSE streams`, value: round(idle.totalMib), unit: "MiB" },
      {
        name: `sse-streams: server CPU while ${idle.open} SSE streams idle (heartbeats)`,
        value: round(idle.cpuPercent),
        unit: "% of a core",
      },
      {
        name: `sse-streams: server memory growth, ${PAUSED_READERS} paused readers of a ${round(paused.streamMib)} MiB stream`,
        value: round(paused.growthMib),
        unit: "MiB",
        target: "<= 50",
      },
    ];
  } finally {
    devtools.close();
    agent.destroy();
    await server.stop();
  }
}
