import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { type ServerProcess, spawnServer } from "../runs/testing/process.ts";

/**
 * A protocol run that emits ten times more events than RUN_EVENT_LOG_MAX_EVENTS: a stream of
 * the thread from its start is told, over SSE and over a WebSocket, that the run's first events
 * were dropped, then gets the kept ones; `agent.getTree` says so beside the tree.
 */

const config = new URL("./testing/langgraph.json", import.meta.url).pathname;
const EVENTS = 1000;

let server: ServerProcess;
let threadId: string;

beforeAll(async () => {
  server = await spawnServer(
    testRedisUrl(),
    uniquePrefix("proto-cap"),
    { LANGSMITH_TRACING: "false", RUN_EVENT_LOG_MAX_EVENTS: "100", N_WORKERS: "1" },
    config,
  );
  threadId = randomUUID();
  const started = await fetch(`${server.url}/threads/${threadId}/commands`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ id: 1, method: "run.start", params: { assistant_id: "chatty", input: { count: EVENTS } } }),
  });
  expect(started.status).toBe(200);
  const { run_id } = ((await started.json()) as { result: { run_id: string } }).result;
  await server.client.runs.join(threadId, run_id);
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

/** `custom` payload index of a protocol event's JSON text, or undefined for other events. */
const customIndex = (json: string): number | undefined => {
  const event = JSON.parse(json) as { method?: string; params?: { data?: { payload?: { i?: number } } } };
  return event.method === "custom" ? event.params?.data?.payload?.i : undefined;
};

describe("a thread stream over a capped run log", () => {
  it("over SSE: an error event first, then the kept events to the run's end", async () => {
    const controller = new AbortController();
    const response = await fetch(`${server.url}/threads/${threadId}/stream/events`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ channels: ["custom", "lifecycle"] }),
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    const blocks: { event: string; data: string }[] = [];
    const decoder = new TextDecoder();
    let buffer = "";
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    try {
      while (!blocks.some(({ data }) => data.includes('"event":"completed"'))) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const lines = buffer.slice(0, end).split("\n");
          buffer = buffer.slice(end + 2);
          const field = (name: string) => lines.find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2);
          const data = field("data");
          if (data) blocks.push({ event: field("event") ?? "", data });
        }
      }
    } finally {
      controller.abort();
    }
    expect(blocks[0]?.event).toBe("error");
    expect(JSON.parse(blocks[0]?.data ?? "")).toMatchObject({ error: "EventsDropped", message: expect.any(String) });
    const indices = blocks.slice(1).flatMap(({ data }) => customIndex(data) ?? []);
    expect(indices.length).toBeGreaterThanOrEqual(90);
    expect(indices.length).toBeLessThan(200);
    expect(indices).toEqual(indices.map((_, i) => EVENTS - indices.length + i));
  });

  it("over a WebSocket: an events_dropped error frame, then the kept events", async () => {
    const socket = new WebSocket(`${server.url.replace(/^http/, "ws")}/threads/${threadId}/stream/events`);
    const frames: string[] = [];
    const ended = new Promise<void>((resolve) => {
      socket.on("message", (data) => {
        frames.push(String(data));
        if (String(data).includes('"event":"completed"')) resolve();
      });
    });
    await new Promise((resolve, reject) => {
      socket.once("open", resolve);
      socket.once("error", reject);
    });
    socket.send(
      JSON.stringify({ id: 1, method: "subscription.subscribe", params: { channels: ["custom", "lifecycle"] } }),
    );
    await ended;
    socket.close();
    const errors = frames.filter((frame) => frame.startsWith('{"type":"error"'));
    expect(errors.map((frame) => JSON.parse(frame))).toEqual([
      { type: "error", id: null, error: "events_dropped", message: expect.any(String) },
    ]);
    const events = frames.filter((frame) => frame.startsWith('{"type":"event"'));
    expect(frames.indexOf(errors[0] as string)).toBeLessThan(frames.indexOf(events[0] as string));
    const indices = events.flatMap((frame) => customIndex(frame) ?? []);
    expect(indices.at(-1)).toBe(EVENTS - 1);
    expect(indices).toEqual(indices.map((_, i) => EVENTS - indices.length + i));
  });

  it("agent.getTree: the tree from the kept events, and that the earliest were dropped", async () => {
    const response = await fetch(`${server.url}/threads/${threadId}/commands`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: 2, method: "agent.getTree", params: {} }),
    });
    expect(response.status).toBe(200);
    const { result } = (await response.json()) as { result: Record<string, unknown> };
    expect(result).toEqual({
      tree: { namespace: [], status: "completed", graph_name: "chatty" },
      events_dropped: expect.stringMatching(/^Events 0 to \d+ of this run were dropped/),
    });
  });
});
