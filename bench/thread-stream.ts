import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { WebSocket } from "ws";
import { type ServerProcess, spawnServer } from "../agent-server/src/runs/testing/process.ts";
import { percentile, round } from "./support/measure.ts";
import { processCpuSeconds } from "./support/run-load.ts";
import type { BenchResult } from "./types.ts";

/**
 * The thread-centric protocol (SDK ≥ 1.13) over WebSockets, against one server process: time to
 * first event, events/s through one stream, memory per idle socket, and the server CPU of the same
 * run streamed the old way (`POST /threads/{id}/runs/stream`) and the new way.
 */

const project = new URL("../agent-server/src/thread-stream/testing/langgraph.json", import.meta.url).pathname;
const FIRST_EVENT_SAMPLES = 50;
const REPLAYED_STEPS = 400;
const IDLE_SOCKETS = 1000;
/**
 * Runs per CPU round, and rounds: many short alternating rounds, so drift and load spikes hit both
 * ways alike. /proc counts CPU in 10 ms ticks, so a round needs a few hundred ms of it (30 runs).
 */
const CPU_RUNS = 30;
const CPU_ROUNDS = 12;
const chatInput = { messages: [{ role: "user", content: "weather?" }] };

type Frame = {
  type: string;
  id?: number;
  seq?: number;
  method?: string;
  params?: { namespace: string[]; data: { event?: string } };
};

const isTerminal = (frame: Frame) =>
  frame.type === "event" &&
  frame.method === "lifecycle" &&
  frame.params?.namespace.length === 0 &&
  frame.params.data.event !== "running";

/** A protocol socket on a new thread, with a way to send commands and to wait for frames. */
async function openSocket(url: string) {
  const threadId = randomUUID();
  const socket = new WebSocket(`${url.replace(/^http/, "ws")}/threads/${threadId}/stream/events`);
  const listeners = new Set<(frame: Frame) => void>();
  socket.on("message", (data) => {
    const frame = JSON.parse(String(data)) as Frame;
    for (const listener of listeners) listener(frame);
  });
  await new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
  let nextId = 1;
  return {
    socket,
    threadId,
    /** Resolves with the first frame from now on that `accept` takes (it sees every frame until then). */
    until: (accept: (frame: Frame) => boolean) =>
      new Promise<Frame>((resolve) => {
        const listener = (frame: Frame) => {
          if (!accept(frame)) return;
          listeners.delete(listener);
          resolve(frame);
        };
        listeners.add(listener);
      }),
    send: (method: string, params: object) => {
      const id = nextId++;
      socket.send(JSON.stringify({ id, method, params }));
      return id;
    },
  };
}

/** A command, answered. */
async function commandOf(socket: Awaited<ReturnType<typeof openSocket>>, method: string, params: object) {
  let id = 0;
  const answered = socket.until((frame) => frame.type !== "event" && frame.id === id);
  id = socket.send(method, params);
  const answer = await answered;
  if (answer.type !== "success") throw new Error(`${method} failed: ${JSON.stringify(answer)}`);
  return answer;
}

/** From `run.start` to the first event frame, on a fresh thread each time. */
async function timeToFirstEvent(url: string): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < FIRST_EVENT_SAMPLES + 5; i++) {
    const client = await openSocket(url);
    const began = performance.now();
    const first = client.until((frame) => frame.type === "event");
    // As the SDK does: subscribe once the run is started (it gates subscriptions on run.start).
    await commandOf(client, "run.start", { assistant_id: "chat", input: chatInput });
    client.send("subscription.subscribe", { channels: ["values", "messages", "lifecycle"] });
    await first;
    if (i >= 5) samples.push(performance.now() - began);
    client.socket.close();
  }
  return samples;
}

/** Events/s of one stream replaying a completed run of `REPLAYED_STEPS` steps from Redis. */
async function replayRate(url: string): Promise<{ perSecond: number; events: number }> {
  const client = await openSocket(url);
  const done = client.until(isTerminal);
  await commandOf(client, "run.start", {
    assistant_id: "steps",
    input: { steps: REPLAYED_STEPS, label: "r" },
    config: { recursion_limit: REPLAYED_STEPS * 2 },
  });
  client.send("subscription.subscribe", { channels: ["lifecycle"] });
  await done;
  let events = 0;
  const replayed = client.until((frame) => {
    if (frame.type === "event") events++;
    return isTerminal(frame);
  });
  const began = performance.now();
  // With lifecycle: the first subscription already had the run's end, so it is not sent for it again.
  client.send("subscription.subscribe", {
    channels: ["values", "updates", "tasks", "checkpoints", "lifecycle"],
    since: 0,
  });
  await replayed;
  const seconds = (performance.now() - began) / 1000;
  client.socket.close();
  return { perSecond: events / seconds, events };
}

const rssKib = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);

/** Server memory per open socket, each subscribed on a thread with nothing running (what idle clients hold). */
async function idleSocketMemory(server: ServerProcess): Promise<{ kib: number; open: number }> {
  const before = rssKib(server.pid);
  const sockets: WebSocket[] = [];
  try {
    for (let i = 0; i < IDLE_SOCKETS; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, IDLE_SOCKETS - i) }, async () => {
          const client = await openSocket(server.url);
          await commandOf(client, "subscription.subscribe", { channels: ["values", "lifecycle"] });
          return client.socket;
        }),
      );
      sockets.push(...batch);
    }
    // Let the server settle (allocations of the handshakes collected) before reading its memory.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    return { kib: (rssKib(server.pid) - before) / sockets.length, open: sockets.length };
  } finally {
    for (const socket of sockets) socket.terminate();
  }
}

/** One chat run streamed the old way: `POST /threads/{id}/runs/stream`, read to the end. */
async function sseRun(url: string, agent: Agent): Promise<void> {
  const thread = await fetch(`${url}/threads`, {
    method: "POST",
    body: "{}",
    headers: { "content-type": "application/json" },
  });
  const { thread_id } = (await thread.json()) as { thread_id: string };
  await new Promise<void>((resolve, reject) => {
    const req = request(
      `${url}/threads/${thread_id}/runs/stream`,
      { method: "POST", agent, headers: { "content-type": "application/json" } },
      (res) => {
        res.resume();
        res.on("end", resolve);
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(
      JSON.stringify({
        assistant_id: "chat",
        input: chatInput,
        stream_mode: ["values", "updates", "messages-tuple"],
      }),
    );
  });
}

/** The same run over the protocol, as the SDK streams it: a socket, run.start, one subscription, to the end. */
async function protocolRun(url: string): Promise<void> {
  const client = await openSocket(url);
  const done = client.until(isTerminal);
  await commandOf(client, "run.start", { assistant_id: "chat", input: chatInput });
  client.send("subscription.subscribe", { channels: ["values", "updates", "messages", "lifecycle"] });
  await done;
  client.socket.close();
}

/** Server CPU ms per run of `runs` sequential runs. */
async function cpuPerRun(server: ServerProcess, runOnce: () => Promise<void>): Promise<number> {
  const before = processCpuSeconds(server.pid) ?? Number.NaN;
  for (let i = 0; i < CPU_RUNS; i++) await runOnce();
  return (((processCpuSeconds(server.pid) ?? Number.NaN) - before) * 1000) / CPU_RUNS;
}

export async function run(redisUrl: string): Promise<BenchResult[]> {
  const server = await spawnServer(
    redisUrl,
    `bench-thread-stream-${randomUUID().slice(0, 8)}:`,
    { N_WORKERS: "4", STREAM_HEARTBEAT_MS: "5000", LANGSMITH_TRACING: "false" },
    project,
  );
  const agent = new Agent({ keepAlive: true });
  try {
    const firstEvent = await timeToFirstEvent(server.url);
    const replay = await replayRate(server.url);
    // A warm-up of each way first: the first runs compile and cache.
    for (let i = 0; i < 10; i++) {
      await sseRun(server.url, agent);
      await protocolRun(server.url);
    }
    // Each round measures both ways, in alternating order; the overhead is the median of the rounds' ratios.
    const sse: number[] = [];
    const protocol: number[] = [];
    const overheads: number[] = [];
    for (let round = 0; round < CPU_ROUNDS; round++) {
      const ways = [
        () => cpuPerRun(server, () => sseRun(server.url, agent)).then((ms) => sse.push(ms)),
        () => cpuPerRun(server, () => protocolRun(server.url)).then((ms) => protocol.push(ms)),
      ];
      for (const way of round % 2 === 0 ? ways : ways.reverse()) await way();
      overheads.push(((protocol.at(-1) ?? Number.NaN) / (sse.at(-1) ?? Number.NaN) - 1) * 100);
    }
    const sseMs = percentile(sse, 50);
    const protocolMs = percentile(protocol, 50);
    const idle = await idleSocketMemory(server);
    return [
      {
        name: "thread stream: time to first event (WebSocket) p50",
        value: round(percentile(firstEvent, 50)),
        unit: "ms",
      },
      {
        name: "thread stream: time to first event (WebSocket) p99",
        value: round(percentile(firstEvent, 99)),
        unit: "ms",
      },
      {
        name: `thread stream: events/s through one stream (replay of ${replay.events} events)`,
        value: Math.round(replay.perSecond),
        unit: "events/s",
      },
      {
        name: `thread stream: server memory per idle WebSocket (${idle.open} open)`,
        value: round(idle.kib),
        unit: "KiB",
      },
      {
        name: "thread stream: server CPU per chat run, runs.stream (SSE v1), median",
        value: round(sseMs, 2),
        unit: "ms",
      },
      {
        name: "thread stream: server CPU per chat run, protocol (WebSocket), median",
        value: round(protocolMs, 2),
        unit: "ms",
      },
      {
        name: `thread stream: protocol CPU overhead over runs.stream, median of ${CPU_ROUNDS} rounds`,
        value: round(percentile(overheads, 50)),
        unit: "%",
        target: "<= 10",
      },
      { name: "thread stream: protocol CPU overhead, lowest round", value: round(Math.min(...overheads)), unit: "%" },
      { name: "thread stream: protocol CPU overhead, highest round", value: round(Math.max(...overheads)), unit: "%" },
    ];
  } finally {
    agent.destroy();
    await server.stop();
  }
}
