import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { type ServerProcess, spawnServer } from "../runs/testing/process.ts";
import type { ProtocolEvent } from "./events.ts";
import { type LatestClient, latestSdk } from "./testing/sdk.ts";

/**
 * The thread-centric protocol through the official SDK (`client.threads.stream`, SSE transport)
 * against real server processes on one Redis: A and B serve clients and execute nothing, C only
 * executes (its workers), so every stream reads events another process produced.
 */

const config = new URL("./testing/langgraph.json", import.meta.url).pathname;

let a: ServerProcess;
let b: ServerProcess;
let c: ServerProcess;
let Client: LatestClient;

beforeAll(async () => {
  const prefix = uniquePrefix("proto");
  const quiet = { LANGSMITH_TRACING: "false", STREAM_HEARTBEAT_MS: "300" };
  ({ Client } = await latestSdk());
  // One after the other: three processes loading graphs at once starve a small machine.
  a = await spawnServer(testRedisUrl(), prefix, { ...quiet, N_WORKERS: "0" }, config);
  b = await spawnServer(testRedisUrl(), prefix, { ...quiet, N_WORKERS: "0" }, config);
  c = await spawnServer(testRedisUrl(), prefix, { ...quiet, N_WORKERS: "2" }, config);
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop(), c?.stop()]);
});

const client = (server: ServerProcess, fetchImpl?: typeof fetch) =>
  new Client({ apiUrl: server.url, callerOptions: { maxRetries: 0 }, ...(fetchImpl && { fetch: fetchImpl }) });

type Thread = ReturnType<InstanceType<LatestClient>["threads"]["stream"]>;

/** Every event a subscription receives until the root lifecycle ends a run (`interrupted`, `completed`, `failed`). */
async function untilTerminal(thread: Thread, channels: string[], afterSeq = 0) {
  const subscription = await thread.subscribe({ channels: channels as never });
  const events: ProtocolEvent[] = [];
  for await (const event of subscription as AsyncIterable<ProtocolEvent>) {
    // A new stream replays the thread's earlier runs first (as the reference server does).
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

/** Raw SSE events of one `POST …/stream/events` until the root lifecycle ends or `stopAfter` events arrived. */
async function readRaw(server: ServerProcess, threadId: string, body: object, stopAfter = Number.POSITIVE_INFINITY) {
  const controller = new AbortController();
  const response = await fetch(`${server.url}/threads/${threadId}/stream/events`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  expect(response.status).toBe(200);
  const events: ProtocolEvent[] = [];
  const decoder = new TextDecoder();
  let buffer = "";
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return events;
      buffer += decoder.decode(value, { stream: true });
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf("\n\n");
        const data = block.split("\n").find((line) => line.startsWith("data: "));
        if (!data) continue;
        const event = JSON.parse(data.slice(6)) as ProtocolEvent;
        events.push(event);
        const lifecycle = event.params.data as { event?: string };
        const terminal =
          event.method === "lifecycle" && event.params.namespace.length === 0 && lifecycle.event !== "running";
        if (terminal || events.length >= stopAfter) return events;
      }
    }
  } finally {
    controller.abort();
  }
}

const command = (server: ServerProcess, threadId: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}/threads/${threadId}/commands`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

/** A new thread whose protocol run (the weather question to the chat agent) has ended; its id. */
async function askedForWeather(): Promise<string> {
  const threadId = randomUUID();
  const thread = client(a).threads.stream(threadId, { assistantId: "chat" });
  const events = untilTerminal(thread, ["lifecycle"]);
  await thread.run.start({ input: { messages: [{ role: "user", content: "weather?" }] } });
  await events;
  await thread.close();
  return threadId;
}

describe("thread-centric protocol over SSE", () => {
  it("streams a run with tool calls and tokens, numbered per thread", async () => {
    const thread = client(a).threads.stream(randomUUID(), { assistantId: "chat" });
    const events = untilTerminal(thread, ["messages", "tools", "values", "lifecycle", "updates"]);
    const started = await thread.run.start({ input: { messages: [{ role: "user", content: "weather?" }] } });
    const received = await events;
    expect(started).toMatchObject({ run_id: expect.any(String) });
    expect(rootLifecycle(received)).toEqual(["running", "completed"]);
    const seqs = received.map((event) => event.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(new Set(received.map((event) => event.event_id)).size).toBe(received.length);
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
    const output = (await thread.output) as { messages: { type: string; content: unknown }[] };
    expect(output.messages.map((message) => message.type)).toEqual(["human", "ai", "tool", "ai"]);
    await thread.close();
  });

  it("answers an interrupt in a subgraph with input.respond, namespaces and all", async () => {
    const threadId = randomUUID();
    const thread = client(b).threads.stream(threadId, { assistantId: "review" });
    const first = untilTerminal(thread, ["lifecycle", "input", "values"]);
    const { run_id: firstRun } = (await thread.run.start({ input: { topic: "otters" } })) as { run_id: string };
    const asked = await first;
    expect(rootLifecycle(asked)).toEqual(["running", "interrupted"]);
    const request = asked.find((event) => event.method === "input.requested");
    expect(request?.params.namespace).toEqual([expect.stringMatching(/^approval:/)]);
    expect(request?.params.data).toMatchObject({ payload: { question: "Publish this draft?" } });
    expect(thread.interrupted).toBe(true);
    // Only the subgraph's events, through its static name (the reference's prefix matching).
    const inSubgraph = await readRaw(
      a,
      threadId,
      { channels: ["lifecycle", "input", "values"], namespaces: [["approval"]] },
      3,
    );
    expect(inSubgraph.every((event) => event.params.namespace[0]?.startsWith("approval:"))).toBe(true);
    expect(inSubgraph.map((event) => event.method)).toContain("input.requested");

    const interruptId = (request?.params.data as { interrupt_id: string }).interrupt_id;
    const second = untilTerminal(thread, ["lifecycle", "values"], asked.at(-1)?.seq);
    await thread.input.respond({
      namespace: request?.params.namespace ?? [],
      interrupt_id: interruptId,
      response: "yes",
    });
    expect(rootLifecycle(await second)).toContain("completed");
    const state = (await client(a).threads.getState(threadId)).values as { verdict: string; published: boolean };
    expect(state).toMatchObject({ verdict: "yes", published: true });
    // The agent tree of the thread's latest run, and of the interrupted one by its id.
    const subgraph = { namespace: [expect.stringMatching(/^approval:/)], graph_name: "approval" };
    expect(await thread.agent.getTree()).toEqual({
      tree: { namespace: [], status: "completed", graph_name: "review", children: [expect.objectContaining(subgraph)] },
    });
    expect(await thread.agent.getTree({ run_id: firstRun })).toEqual({
      tree: {
        namespace: [],
        status: "interrupted",
        graph_name: "review",
        children: [expect.objectContaining(subgraph)],
      },
    });
    await expect(thread.agent.getTree({ run_id: randomUUID() })).rejects.toMatchObject({ status: 404 });
    await thread.close();
  });

  it("resumes exactly after `since` through another replica while a third executes", async () => {
    const threadId = randomUUID();
    const started = await command(a, threadId, {
      id: 1,
      method: "run.start",
      params: { assistant_id: "steps", input: { steps: 6, delay_ms: 150, label: "r" } },
    });
    expect(started.status).toBe(200);
    const filter = { channels: ["values", "updates", "lifecycle", "tasks", "checkpoints"] };
    const head = await readRaw(a, threadId, filter, 5);
    const tail = await readRaw(b, threadId, { ...filter, since: head.at(-1)?.seq });
    const whole = await readRaw(b, threadId, filter);
    expect([...head, ...tail].map((event) => event.event_id)).toEqual(whole.map((event) => event.event_id));
    expect([...head, ...tail]).toEqual(whole);
    expect(rootLifecycle(whole)).toEqual(["running", "completed"]);
  });

  it("loses nothing when the SDK's stream is cut and it reconnects to another replica", async () => {
    const threadId = randomUUID();
    let streams = 0;
    // The first event stream goes to A and is cut after a few events; the SDK reconnects (to B).
    const routed: typeof fetch = async (input, init) => {
      const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
      const isStream = url.pathname.endsWith("/stream/events");
      const target = new URL(isStream && streams++ > 0 ? b.url : a.url);
      url.host = target.host;
      const response = await fetch(url, init);
      if (!isStream || streams > 1 || !response.body) return response;
      let chunks = 0;
      const cut = response.body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            if (++chunks > 4) controller.error(new Error("connection cut"));
            else controller.enqueue(chunk);
          },
        }),
      );
      return new Response(cut, { status: response.status, headers: response.headers });
    };
    const thread = client(a).threads.stream(threadId, { assistantId: "steps", fetch: routed });
    const events = untilTerminal(thread, ["values", "lifecycle", "updates"]);
    await thread.run.start({ input: { steps: 5, delay_ms: 150, label: "s" } });
    const received = await events;
    expect(streams).toBeGreaterThan(1);
    const whole = await readRaw(c, threadId, { channels: ["values", "lifecycle", "updates"] });
    expect(received.map((event) => event.event_id)).toEqual(whole.map((event) => event.event_id));
    await thread.close();
  });

  it("ends a cancelled run with lifecycle interrupted", async () => {
    const threadId = randomUUID();
    const thread = client(a).threads.stream(threadId, { assistantId: "steps" });
    const events = untilTerminal(thread, ["lifecycle", "values"]);
    const { run_id: runId } = (await thread.run.start({ input: { steps: 20, delay_ms: 200, label: "c" } })) as {
      run_id: string;
    };
    await readRaw(b, threadId, { channels: ["values"] }, 2);
    await client(b).runs.cancel(threadId, runId);
    expect(rootLifecycle(await events)).toEqual(["running", "interrupted"]);
    await thread.close();
  });

  it("lists a thread's checkpoints with state.listCheckpoints, as its history has them", async () => {
    const threadId = await askedForWeather();
    const listed = await command(b, threadId, { id: 1, method: "state.listCheckpoints", params: { limit: 3 } });
    expect(listed.status).toBe(200);
    const { result } = (await listed.json()) as { result: { checkpoints: Record<string, unknown>[] } };
    const history = (await (
      await fetch(`${b.url}/threads/${threadId}/history`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ limit: 3 }),
      })
    ).json()) as { checkpoint_id: string; created_at: string; metadata: { step: number } }[];
    expect(result.checkpoints).toHaveLength(3);
    expect(result.checkpoints).toEqual(
      history.map((state) =>
        expect.objectContaining({
          id: state.checkpoint_id,
          timestamp: state.created_at,
          step: state.metadata.step,
          metadata: state.metadata,
        }),
      ),
    );
  });

  it("forks a thread from an earlier checkpoint with state.fork and runs from there", async () => {
    const threadId = await askedForWeather();
    const before = await client(b).threads.getHistory(threadId, { limit: 20 });
    // The checkpoint with the user's message, before the model answered: the run goes on from it again.
    const asked = before.find((state) => state.metadata?.step === 0);
    const forkedFrom = asked?.checkpoint.checkpoint_id as string;
    expect(forkedFrom).toBeDefined();
    const forked = await command(b, threadId, { id: 7, method: "state.fork", params: { checkpoint_id: forkedFrom } });
    expect(forked.status).toBe(200);
    const { result } = (await forked.json()) as { result: { run_id: string; thread_id: string } };
    expect(result.thread_id).toBe(threadId);
    await client(b).runs.join(threadId, result.run_id);
    const after = await client(b).threads.getHistory(threadId, { limit: 40 });
    // The new branch starts at the fork point, next to the first branch's checkpoints.
    const branch = after.filter(
      (state) => !before.some((old) => old.checkpoint.checkpoint_id === state.checkpoint.checkpoint_id),
    );
    expect(branch.length).toBeGreaterThan(0);
    expect(branch.at(-1)?.parent_checkpoint?.checkpoint_id).toBe(forkedFrom);
    const state = await client(b).threads.getState(threadId);
    const messages = (state.values as { messages: { type: string; id: string }[] }).messages;
    const original = (before[0]?.values as { messages: { type: string; id: string }[] }).messages;
    expect(messages.map((message) => message.type)).toEqual(original.map((message) => message.type));
    expect(messages[0]?.id).toBe(original[0]?.id);
    expect(messages.at(-1)?.id).not.toBe(original.at(-1)?.id);
    // Bad forks: no checkpoint named, one the thread does not have, a thread with no run.
    const unnamed = await command(b, threadId, { id: 8, method: "state.fork", params: {} });
    expect(unnamed.status).toBe(422);
    expect(await unnamed.json()).toMatchObject({
      error: "invalid_argument",
      detail: [expect.objectContaining({ loc: ["body", "params", "checkpoint_id"], type: "missing" })],
    });
    const unknown = await command(b, threadId, {
      id: 9,
      method: "state.fork",
      params: { checkpoint_id: randomUUID() },
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ type: "error", id: 9, error: "no_such_checkpoint" });
    const fresh = await command(b, randomUUID(), {
      id: 10,
      method: "state.fork",
      params: { checkpoint_id: forkedFrom },
    });
    expect(fresh.status).toBe(404);
    expect(await fresh.json()).toMatchObject({ type: "error", id: 10, error: "no_such_run" });
  });

  it("answers bad commands and filters with 422, unknown threads with 404", async () => {
    const threadId = randomUUID();
    const envelope = await command(a, threadId, { method: "run.start" });
    expect(envelope.status).toBe(422);
    expect(((await envelope.json()) as { detail: unknown[] }).detail).toContainEqual(
      expect.objectContaining({ loc: ["body", "id"], type: "missing" }),
    );
    const params = await command(a, threadId, { id: 1, method: "run.start", params: { input: {} } });
    expect(params.status).toBe(422);
    expect(await params.json()).toMatchObject({
      type: "error",
      id: 1,
      error: "invalid_argument",
      detail: [expect.objectContaining({ loc: ["body", "params", "assistant_id"] })],
    });
    const unknown = await command(a, threadId, { id: 2, method: "run.explode" });
    expect(unknown.status).toBe(422);
    expect(await unknown.json()).toMatchObject({ type: "error", id: 2, error: "unknown_command" });
    const assistant = await command(a, threadId, {
      id: 3,
      method: "run.start",
      params: { assistant_id: "nope", input: {} },
    });
    expect(assistant.status).toBe(404);
    const respond = await command(a, threadId, {
      id: 4,
      method: "input.respond",
      params: { interrupt_id: "x", response: "yes" },
    });
    expect(respond.status).toBe(404);
    const filter = await fetch(`${a.url}/threads/${threadId}/stream/events`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ channels: ["values"], extra: true }),
    });
    expect(filter.status).toBe(422);
    const missing = await fetch(`${a.url}/threads/${threadId}/stream/events`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ channels: ["values"] }),
    });
    expect(missing.status).toBe(404);
  });

  it("shows its endpoints in /info and /openapi.json", async () => {
    const info = (await (await fetch(`${a.url}/info`)).json()) as { flags: Record<string, boolean> };
    expect(info.flags.thread_stream).toBe(true);
    const openapi = (await (await fetch(`${a.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(openapi.paths)).toEqual(
      expect.arrayContaining(["/threads/{thread_id}/commands", "/threads/{thread_id}/stream/events"]),
    );
  });
});
