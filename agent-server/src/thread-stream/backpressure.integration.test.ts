import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { inspector, rss } from "../runs/testing/memory.ts";
import { type ServerProcess, spawnServer } from "../runs/testing/process.ts";

/**
 * WebSocket clients that stop reading a long protocol stream: the server holds a bounded amount
 * for each, then closes it with 1008 once it took nothing for STREAM_STALL_TIMEOUT_MS, although
 * it also answered no ping for longer than the pong timeout (three heartbeats).
 */

const config = new URL("./testing/langgraph.json", import.meta.url).pathname;
const HEARTBEAT_MS = 3000;
const STALL_MS = 12_000;
/** 4,000 custom events of 10 KB: a 40 MB log, far more than the kernel buffers of a socket (about 10 MB here). */
const EVENTS = 4000;
const EVENT_BYTES = 10_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let server: ServerProcess;
let threadId: string;

/** Runs `chatty` to its end through the protocol. */
async function largeRun(): Promise<string> {
  const id = randomUUID();
  const command = {
    id: 1,
    method: "run.start",
    params: { assistant_id: "chatty", input: { count: EVENTS, size: EVENT_BYTES } },
  };
  const started = await fetch(`${server.url}/threads/${id}/commands`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(command),
  });
  expect(started.status).toBe(200);
  const { run_id } = ((await started.json()) as { result: { run_id: string } }).result;
  await server.client.runs.join(id, run_id);
  return id;
}

/** A socket subscribed to the thread's custom events, counting them; resolves once subscribed. */
async function subscribed(): Promise<{ socket: WebSocket; received: () => number }> {
  const socket = new WebSocket(`${server.url.replace(/^http/, "ws")}/threads/${threadId}/stream/events`);
  let events = 0;
  const answered = new Promise<void>((resolve) => {
    socket.on("message", (data) => {
      const text = String(data);
      if (text.startsWith('{"type":"event"')) events++;
      else resolve();
    });
  });
  await new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
  socket.send(JSON.stringify({ id: 1, method: "subscription.subscribe", params: { channels: ["custom"] } }));
  await answered;
  return { socket, received: () => events };
}

describe("thread stream over a WebSocket that stops reading", () => {
  beforeAll(async () => {
    server = await spawnServer(
      testRedisUrl(),
      uniquePrefix("proto-bp"),
      {
        LANGSMITH_TRACING: "false",
        // The default lease, not the test servers' 1.5 s: under load, writing the 40 MB log has kept
        // the server from renewing it, and the attempt that took the run over starts the log anew
        // from the checkpoint after the node, with none of the 4,000 events.
        RUN_LEASE_MS: "15000",
        STREAM_HEARTBEAT_MS: String(HEARTBEAT_MS),
        STREAM_STALL_TIMEOUT_MS: String(STALL_MS),
        // The server logs each slow-consumer close at info: the test resumes the sockets after them.
        LOG_LEVEL: "info",
        NODE_OPTIONS: "--inspect=127.0.0.1:0",
      },
      config,
    );
    threadId = await largeRun();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("holds a bounded amount for 4 stalled sockets, then closes each with 1008 after the stall limit", async () => {
    const devtools = await inspector(server);
    // A whole read first, so what one stream allocates on its way is in the baseline.
    const whole = await subscribed();
    await expect.poll(whole.received, { timeout: 60_000, interval: 200 }).toBe(EVENTS);
    whole.socket.close();
    await devtools.collect();
    const before = rss(server.pid);

    const subscribing = Date.now();
    const stalled = await Promise.all(Array.from({ length: 4 }, () => subscribed()));
    for (const { socket } of stalled) socket.pause();
    const closes = stalled.map(
      ({ socket }) =>
        new Promise<{ code: number; reason: string }>((resolve) => {
          socket.once("close", (code, reason) => resolve({ code, reason: String(reason) }));
        }),
    );
    // The kernel's buffers and each socket's 1 MiB fill, then every stream waits (past the pong timeout).
    await sleep(3.5 * HEARTBEAT_MS);
    await devtools.collect();
    const during = rss(server.pid);
    devtools.close();
    // Unbounded, each socket would hold the 40 MB log, less what the kernel took.
    expect(during - before).toBeLessThan(40 * 1024 * 1024);

    // The buffers fill within seconds (about 4 idle, longer under load); the stall limit runs
    // from then. A paused client cannot see the close frame behind them, so the server's log
    // says when all four were closed, none before the stall limit.
    const slowClosed = () => server.logs().match(/protocol socket closed: slow consumer/g)?.length ?? 0;
    let firstClose = 0;
    await expect
      .poll(
        () => {
          if (!firstClose && slowClosed() > 0) firstClose = Date.now();
          return slowClosed();
        },
        { timeout: 90_000, interval: 200 },
      )
      .toBe(stalled.length);
    expect(firstClose - subscribing).toBeGreaterThanOrEqual(STALL_MS);
    for (const { socket } of stalled) socket.resume();
    const closed = await Promise.race([Promise.all(closes), sleep(30_000).then(() => "still open")]);
    expect(closed).toEqual(stalled.map(() => ({ code: 1008, reason: expect.stringMatching(/^slow consumer/) })));
    for (const { received } of stalled) expect(received()).toBeLessThan(EVENTS);
    // The server goes on serving whole streams.
    const again = await subscribed();
    await expect.poll(again.received, { timeout: 60_000, interval: 200 }).toBe(EVENTS);
    again.socket.close();
  }, 300_000);
});
