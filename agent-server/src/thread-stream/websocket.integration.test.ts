import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { type ServerProcess, spawnServer } from "../runs/testing/process.ts";
import type { ProtocolEvent } from "./events.ts";
import { type LatestClient, latestSdk } from "./testing/sdk.ts";

/**
 * The thread-centric protocol over WebSockets, through the official SDK
 * (`client.threads.stream(…, {transport: "websocket"})`) and a raw `ws` client, against two real
 * server processes with an API key on one Redis: A only serves (no workers), B executes, so the
 * events a socket on A carries were produced by B.
 */

const config = new URL("./testing/langgraph.json", import.meta.url).pathname;
const KEY = "ws-test-key";

let a: ServerProcess;
let b: ServerProcess;
let Client: LatestClient;

beforeAll(async () => {
  const prefix = uniquePrefix("proto-ws");
  const env = { LANGSMITH_TRACING: "false", STREAM_HEARTBEAT_MS: "300", AGENTPLANE_API_KEYS: KEY };
  ({ Client } = await latestSdk());
  a = await spawnServer(testRedisUrl(), prefix, { ...env, N_WORKERS: "0" }, config);
  b = await spawnServer(testRedisUrl(), prefix, { ...env, N_WORKERS: "2" }, config);
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

const socketUrl = (server: ServerProcess, threadId: string) =>
  `${server.url.replace(/^http/, "ws")}/threads/${threadId}/stream/events`;

/** Every frame a socket received, parsed. */
type Frames = Record<string, unknown>[];

/**
 * A thread stream over WebSockets. The SDK's browser-safe transport refuses default headers, so
 * the key goes on the socket (the way a Node client authenticates); `route` picks each
 * (re)connection's server, and `frames` records what every socket received.
 */
function wsThread(threadId: string, assistantId: string, route: (attempt: number) => ServerProcess) {
  const sockets: WebSocket[] = [];
  const frames: Frames[] = [];
  const client = new Client({ apiUrl: a.url, callerOptions: { maxRetries: 0 } });
  const thread = client.threads.stream(threadId, {
    assistantId,
    transport: "websocket",
    reconnectDelayMs: () => 50,
    webSocketFactory: () => {
      const socket = new WebSocket(socketUrl(route(sockets.length), threadId), { headers: { "x-api-key": KEY } });
      const received: Frames = [];
      socket.on("message", (data) => received.push(JSON.parse(String(data))));
      sockets.push(socket);
      frames.push(received);
      return socket as never;
    },
  });
  return { thread, sockets, frames };
}

type Thread = ReturnType<typeof wsThread>["thread"];

/** Every event a subscription receives until the root lifecycle ends a run, skipping those up to `afterSeq`. */
async function untilTerminal(thread: Thread, channels: string[], afterSeq = 0) {
  const subscription = await thread.subscribe({ channels: channels as never });
  const events: ProtocolEvent[] = [];
  for await (const event of subscription as AsyncIterable<ProtocolEvent>) {
    if (event.seq <= afterSeq) continue;
    events.push(event);
    const data = event.params.data as { event?: string };
    if (event.method === "lifecycle" && event.params.namespace.length === 0 && data.event !== "running") break;
  }
  return events;
}

const rootLifecycle = (events: ProtocolEvent[]) =>
  events
    .filter((event) => event.method === "lifecycle" && event.params.namespace.length === 0)
    .map((event) => (event.params.data as { event: string }).event);

const eventIds = (frames: Frames) => frames.filter((frame) => frame.type === "event").map((frame) => frame.event_id);

/** A raw socket with the key; resolves once open. */
async function openSocket(server: ServerProcess, threadId: string): Promise<{ socket: WebSocket; frames: Frames }> {
  const socket = new WebSocket(socketUrl(server, threadId), { headers: { "x-api-key": KEY } });
  const frames: Frames = [];
  socket.on("message", (data) => frames.push(JSON.parse(String(data))));
  await new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
  return { socket, frames };
}

/** Sends one command and waits for the response with its id (or with no id, for unparseable commands). */
async function command(socket: WebSocket, frames: Frames, payload: unknown, id: number | null) {
  const before = frames.length;
  socket.send(typeof payload === "string" ? payload : JSON.stringify(payload));
  for (let waited = 0; waited < 5000; waited += 20) {
    const answer = frames.slice(before).find((frame) => frame.type !== "event" && frame.id === id);
    if (answer) return answer;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no answer to ${JSON.stringify(payload)}`);
}

/** Raw events of a completed run's thread over SSE from `server`: what every transport must match. */
async function sseEvents(server: ServerProcess, threadId: string, channels: string[]): Promise<ProtocolEvent[]> {
  const controller = new AbortController();
  const response = await fetch(`${server.url}/threads/${threadId}/stream/events`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": KEY },
    body: JSON.stringify({ channels }),
    signal: controller.signal,
  });
  const events: ProtocolEvent[] = [];
  const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return events;
      buffer += value;
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        const data = buffer
          .slice(0, end)
          .split("\n")
          .find((line) => line.startsWith("data: "));
        buffer = buffer.slice(end + 2);
        if (!data) continue;
        const event = JSON.parse(data.slice(6)) as ProtocolEvent;
        events.push(event);
        const lifecycle = event.params.data as { event?: string };
        if (event.method === "lifecycle" && event.params.namespace.length === 0 && lifecycle.event !== "running") {
          return events;
        }
      }
    }
  } finally {
    controller.abort();
  }
}

describe("thread-centric protocol over WebSockets", () => {
  it("streams a run with tool calls and tokens, each event once per socket", async () => {
    const { thread, frames } = wsThread(randomUUID(), "chat", () => a);
    const channels = ["messages", "tools", "values", "lifecycle", "updates"];
    const started = (await thread.run.start({ input: { messages: [{ role: "user", content: "weather?" }] } })) as {
      run_id: string;
    };
    const received = await untilTerminal(thread, channels);
    expect(started.run_id).toEqual(expect.any(String));
    expect(rootLifecycle(received)).toEqual(["running", "completed"]);
    const seqs = received.map((event) => event.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    const text = received
      .filter((event) => event.method === "messages")
      .map((event) => event.params.data as { event: string; delta?: { type: string; text?: string } })
      .filter((data) => data.event === "content-block-delta" && data.delta?.type === "text-delta")
      .map((data) => data.delta?.text)
      .join("");
    expect(text).toBe("Forecast: It is sunny in Paris.");
    const tools = received.filter((event) => event.method === "tools").map((event) => event.params.data);
    expect(tools).toEqual([
      expect.objectContaining({ event: "tool-started", tool_name: "get_weather", tool_call_id: "call_weather_1" }),
      expect.objectContaining({ event: "tool-finished", tool_call_id: "call_weather_1" }),
    ]);
    const output = (await thread.output) as { messages: { type: string }[] };
    expect(output.messages.map((message) => message.type)).toEqual(["human", "ai", "tool", "ai"]);
    // The SDK's own subscriptions (lifecycle, values) overlap the test's: the server sent each event once.
    const ids = eventIds(frames[0] ?? []);
    expect(ids.length).toBeGreaterThanOrEqual(received.length);
    expect(new Set(ids).size).toBe(ids.length);
    // The same events as over SSE from the other replica (the SDK turns messages in values into objects).
    const sse = await sseEvents(b, thread.threadId, channels);
    expect(received.map((event) => event.event_id)).toEqual(sse.map((event) => event.event_id));
    await thread.close();
  });

  it("answers an interrupt in a subgraph with input.respond over the socket", async () => {
    const threadId = randomUUID();
    const { thread } = wsThread(threadId, "review", () => a);
    await thread.run.start({ input: { topic: "otters" } });
    const asked = await untilTerminal(thread, ["lifecycle", "input", "values"]);
    expect(rootLifecycle(asked)).toEqual(["running", "interrupted"]);
    const request = asked.find((event) => event.method === "input.requested");
    expect(request?.params.namespace).toEqual([expect.stringMatching(/^approval:/)]);
    expect(request?.params.data).toMatchObject({ payload: { question: "Publish this draft?" } });
    expect(thread.interrupted).toBe(true);
    expect(await thread.agent.getTree()).toEqual({
      tree: {
        namespace: [],
        status: "interrupted",
        graph_name: "review",
        children: [expect.objectContaining({ namespace: request?.params.namespace, graph_name: "approval" })],
      },
    });
    // Neither server implements injecting messages (the reference answers it as unknown).
    await expect(
      thread.input.inject({ namespace: [], message: { role: "user", content: "also this" } }),
    ).rejects.toMatchObject({ code: "unknown_command" });
    const second = untilTerminal(thread, ["lifecycle", "values"], asked.at(-1)?.seq);
    await thread.input.respond({
      namespace: request?.params.namespace ?? [],
      interrupt_id: (request?.params.data as { interrupt_id: string }).interrupt_id,
      response: "yes",
    });
    expect(rootLifecycle(await second)).toEqual(["running", "completed"]);
    const state = (await thread.state.get({ namespace: [] })) as { values: { verdict: string; published: boolean } };
    expect(state.values).toMatchObject({ verdict: "yes", published: true });
    await thread.close();
  });

  it("loses nothing and repeats nothing when the socket drops and reconnects to the other replica", async () => {
    const threadId = randomUUID();
    const { thread, sockets, frames } = wsThread(threadId, "steps", (attempt) => (attempt === 0 ? a : b));
    const channels = ["values", "lifecycle", "updates"];
    await thread.run.start({ input: { steps: 6, delay_ms: 150, label: "w" } });
    const events = untilTerminal(thread, channels);
    // Cut the first socket (as a network failure would) once a few events went through.
    await expect.poll(() => eventIds(frames[0] ?? []).length, { timeout: 10_000 }).toBeGreaterThanOrEqual(4);
    sockets[0]?.terminate();
    const received = await events;
    expect(sockets.length).toBeGreaterThan(1);
    expect(eventIds(frames[1] ?? []).length).toBeGreaterThan(0);
    const whole = await sseEvents(a, threadId, channels);
    expect(received.map((event) => event.event_id)).toEqual(whole.map((event) => event.event_id));
    expect(rootLifecycle(received)).toEqual(["running", "completed"]);
    await thread.close();
  });

  it("replays exactly after `since`, live across runs, and stops at unsubscribe", async () => {
    const threadId = randomUUID();
    const { socket, frames } = await openSocket(a, threadId);
    const start = await command(
      socket,
      frames,
      { id: 1, method: "run.start", params: { assistant_id: "steps", input: { steps: 3, delay_ms: 50, label: "s" } } },
      1,
    );
    expect(start).toMatchObject({ type: "success", result: { run_id: expect.any(String) } });
    const whole = await sseEvents(b, threadId, ["values", "lifecycle"]);
    const cut = whole[2] as ProtocolEvent;
    const subscribed = await command(
      socket,
      frames,
      { id: 2, method: "subscription.subscribe", params: { channels: ["values", "lifecycle"], since: cut.seq } },
      2,
    );
    expect(subscribed).toMatchObject({ type: "success", result: { subscription_id: expect.any(String) } });
    const after = whole.slice(3).map((event) => event.event_id);
    await expect.poll(() => eventIds(frames), { timeout: 5000 }).toEqual(after);
    // A second run on the same thread reaches the same subscription.
    await command(
      socket,
      frames,
      { id: 3, method: "run.start", params: { assistant_id: "steps", input: { steps: 1, delay_ms: 10, label: "t" } } },
      3,
    );
    await expect
      .poll(() => frames.filter((frame) => frame.type === "event").length, { timeout: 10_000 })
      .toBeGreaterThan(after.length + 2);
    const unsubscribed = await command(
      socket,
      frames,
      {
        id: 4,
        method: "subscription.unsubscribe",
        params: { subscription_id: (subscribed.result as { subscription_id: string }).subscription_id },
      },
      4,
    );
    expect(unsubscribed).toMatchObject({ type: "success", id: 4 });
    const ids = eventIds(frames);
    expect(new Set(ids).size).toBe(ids.length);
    socket.close();
  });

  it("refuses an upgrade without the API key with 401 before any frame", async () => {
    for (const headers of [{}, { "x-api-key": "wrong" }]) {
      const socket = new WebSocket(socketUrl(a, randomUUID()), { headers });
      const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        socket.on("open", () => reject(new Error("the upgrade was accepted")));
        socket.on("message", () => reject(new Error("a frame was sent")));
        socket.on("unexpected-response", (_req, res) => {
          let body = "";
          res.on("data", (chunk: Buffer) => {
            body += chunk;
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
      });
      expect(refused.status).toBe(401);
      expect(JSON.parse(refused.body)).toEqual({ detail: expect.any(String) });
    }
    // Through the SDK: the stream fails to open, nothing is started.
    const client = new Client({ apiUrl: a.url, callerOptions: { maxRetries: 0 } });
    const thread = client.threads.stream(randomUUID(), {
      assistantId: "steps",
      transport: "websocket",
      maxReconnectAttempts: 0,
      webSocketFactory: (url) => new WebSocket(url) as never,
    });
    await expect(thread.run.start({ input: { steps: 1 } })).rejects.toThrow(/Failed to open protocol WebSocket/);
    await thread.close();
  });

  it("answers bad commands with errors and keeps the socket open; bad upgrades with JSON 4xx", async () => {
    const { socket, frames } = await openSocket(a, randomUUID());
    expect(await command(socket, frames, "not json", null)).toMatchObject({ type: "error", error: "invalid_argument" });
    expect(await command(socket, frames, { method: "run.start" }, null)).toMatchObject({
      type: "error",
      error: "invalid_argument",
      detail: [expect.objectContaining({ loc: ["body", "id"], type: "missing" })],
    });
    expect(await command(socket, frames, { id: 1, method: "run.start", params: { input: {} } }, 1)).toMatchObject({
      type: "error",
      error: "invalid_argument",
      detail: [expect.objectContaining({ loc: ["body", "params", "assistant_id"] })],
    });
    const subscribe = { id: 2, method: "subscription.subscribe", params: { channels: ["bogus"] } };
    expect(await command(socket, frames, subscribe, 2)).toMatchObject({ type: "error", error: "invalid_argument" });
    const unsubscribe = { id: 3, method: "subscription.unsubscribe", params: { subscription_id: "nope" } };
    expect(await command(socket, frames, unsubscribe, 3)).toMatchObject({
      type: "error",
      error: "no_such_subscription",
    });
    expect(await command(socket, frames, { id: 4, method: "run.explode" }, 4)).toMatchObject({
      type: "error",
      error: "unknown_command",
    });
    const respond = { id: 5, method: "input.respond", params: { interrupt_id: "x", response: 1 } };
    expect(await command(socket, frames, respond, 5)).toMatchObject({ type: "error", id: 5 });
    // Nested beyond the HTTP body limits: refused before parsing, the socket stays open.
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    expect(await command(socket, frames, deep, null)).toMatchObject({
      type: "error",
      error: "invalid_argument",
      detail: [expect.objectContaining({ loc: ["body"], type: "json_too_complex" })],
    });
    const wide = `{"id":6,"method":"run.start","params":{${Array.from({ length: 20_000 }, (_, i) => `"k${i}":0`).join(",")}}}`;
    expect(await command(socket, frames, wide, null)).toMatchObject({ type: "error", error: "invalid_argument" });
    expect(socket.readyState).toBe(WebSocket.OPEN);
    // Idle, it is kept alive with pings.
    let pings = 0;
    socket.on("ping", () => pings++);
    await expect.poll(() => pings, { timeout: 3000 }).toBeGreaterThanOrEqual(2);
    socket.close();

    // A message over the body limit is refused by ws itself: the socket is closed with 1009.
    const BODY_LIMIT_BYTES = 10 * 1024 * 1024; // the default BODY_LIMIT, which is the socket's maxPayload
    // Built before the socket opens: serialising 10 MB blocks this process, which under load has
    // taken longer than the three 300 ms pings the server waits for a pong.
    const message = Buffer.from(
      JSON.stringify({ id: 1, method: "run.start", params: { input: "x".repeat(BODY_LIMIT_BYTES) } }),
    );
    const big = await openSocket(a, randomUUID());
    const closed = new Promise<number>((resolve) => big.socket.on("close", (code) => resolve(code)));
    big.socket.send(message, { binary: false });
    expect(await closed).toBe(1009);

    const badId = new WebSocket(socketUrl(a, "not-a-uuid"), { headers: { "x-api-key": KEY } });
    const status = await new Promise<number>((resolve) => {
      badId.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      badId.on("open", () => resolve(101));
    });
    expect(status).toBe(422);
    const plain = await fetch(`${a.url}/threads/${randomUUID()}/stream/events`, { headers: { "x-api-key": KEY } });
    expect(plain.status).toBe(426);
    expect(await plain.json()).toEqual({ detail: expect.any(String) });
  });
});
