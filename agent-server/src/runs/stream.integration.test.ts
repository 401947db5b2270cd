import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl } from "../../../testing/redis.ts";
import { type RunTestServer, startRunServer } from "./testing/server.ts";

let server: RunTestServer;

beforeAll(async () => {
  server = await startRunServer(testRedisUrl());
});
afterAll(async () => {
  await server?.close();
});

const hello = { messages: [{ role: "human", content: "hello big world" }] };

/** A stream part as the SDK yields it; `data` is whatever JSON the event carried. */
type Part = { event: string; data: any; id?: string };

async function collect(stream: AsyncIterable<unknown>): Promise<Part[]> {
  const items: Part[] = [];
  for await (const item of stream) items.push(item as Part);
  return items;
}

interface RawEvent {
  event?: string;
  data?: string;
  id?: string;
  comment?: string;
}

/** Reads an SSE response line by line, keeping comments, so the wire format itself is checked. */
async function rawSse(response: Response): Promise<RawEvent[]> {
  const text = await response.text();
  return text
    .split("\n\n")
    .filter((block) => block.length > 0)
    .map((block) => {
      const event: RawEvent = {};
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) event.comment = line.slice(1).trim();
        else {
          const [field, ...rest] = line.split(": ");
          (event as Record<string, string>)[field as string] = rest.join(": ");
        }
      }
      return event;
    });
}

describe("run streaming", () => {
  it("writes SSE with metadata first, single-line JSON data and sequential ids", async () => {
    const thread = await server.client.threads.create();
    const response = await fetch(`${server.url}/threads/${thread.thread_id}/runs/stream`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ assistant_id: "agent", input: hello, stream_mode: ["values", "updates"] }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const location = response.headers.get("content-location");
    expect(location).toMatch(new RegExp(`^/threads/${thread.thread_id}/runs/[0-9a-f-]{36}$`));
    const events = await rawSse(response);
    expect(events[0]?.event).toBe("metadata");
    const metadata = JSON.parse(events[0]?.data ?? "{}");
    expect(metadata).toEqual({ run_id: location?.split("/").at(-1), attempt: 1 });
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => String(i)));
    expect(events.map((e) => e.event)).toEqual(["metadata", "values", "updates", "values"]);
    const last = JSON.parse(events.at(-1)?.data ?? "{}");
    expect(last.messages.at(-1)).toMatchObject({ type: "ai", content: "You said: hello big world" });
  });

  it("streams chat model tokens as messages tuples and as legacy partial/complete messages", async () => {
    const thread = await server.client.threads.create();
    const tuples = await collect(
      server.client.runs.stream(thread.thread_id, "agent", { input: hello, streamMode: "messages-tuple" }),
    );
    const tokens = tuples.filter((e) => e.event === "messages").map((e) => e.data as [{ content: string }, object]);
    expect(tokens.map(([chunk]) => chunk.content)).toEqual(["You", " said:", " hello", " big", " world"]);
    expect(tokens[0]?.[1]).toMatchObject({ langgraph_node: "call_model", thread_id: thread.thread_id });

    const legacy = await collect(
      server.client.runs.stream(thread.thread_id, "agent", { input: hello, streamMode: "messages" }),
    );
    const names = legacy.map((e) => e.event);
    expect(names[0]).toBe("metadata");
    expect(names).toContain("messages/metadata");
    const partials = legacy.filter((e) => e.event === "messages/partial").map((e) => e.data[0].content);
    expect(partials.at(-1)).toBe("You said: hello big world");
    expect(partials[0]).toBe("You");
    const complete = legacy.filter((e) => e.event === "messages/complete").flatMap((e) => e.data);
    expect(complete.map((m: { content: string }) => m.content)).toContain("You said: hello big world");
  });

  it("streams several modes at once: events, debug, tasks, checkpoints, custom", async () => {
    const thread = await server.client.threads.create();
    const events = await collect(
      server.client.runs.stream(thread.thread_id, "custom", {
        input: { messages: [] },
        streamMode: ["events", "debug", "tasks", "checkpoints", "custom"],
      }),
    );
    const names = new Set(events.map((e) => e.event));
    expect([...names].sort()).toEqual(["checkpoints", "custom", "debug", "events", "metadata", "tasks"]);
    expect(events.filter((e) => e.event === "custom").map((e) => e.data)).toEqual([
      { progress: 50 },
      { progress: 100 },
    ]);
    const chainStart = events.find((e) => e.event === "events" && e.data.event === "on_chain_start");
    expect(chainStart?.data).toMatchObject({ name: "LangGraph" });
    const checkpoint = events.find((e) => e.event === "checkpoints")?.data;
    expect(checkpoint).toMatchObject({ checkpoint: { thread_id: thread.thread_id, checkpoint_ns: "" } });
    expect(checkpoint.config.configurable).not.toHaveProperty("__pregel_checkpointer");
    const task = events.find((e) => e.event === "tasks")?.data;
    expect(task).toMatchObject({ name: "report" });
    const debugTypes = new Set(events.filter((e) => e.event === "debug").map((e) => e.data.type));
    expect(debugTypes.has("checkpoint")).toBe(true);
  });

  it("names subgraph events mode|namespace when stream_subgraphs is set", async () => {
    const thread = await server.client.threads.create();
    const events = await collect(
      server.client.runs.stream(thread.thread_id, "nested", {
        input: hello,
        streamMode: ["updates", "messages-tuple"],
        streamSubgraphs: true,
      }),
    );
    const names = events.map((e) => e.event as string);
    expect(names).toContain("updates");
    expect(names.some((name) => /^updates\|delegate:[0-9a-f-]+$/.test(name))).toBe(true);
    expect(names.some((name) => /^messages\|delegate:[0-9a-f-]+$/.test(name))).toBe(true);

    const flat = await collect(
      server.client.runs.stream(thread.thread_id, "nested", { input: hello, streamMode: ["updates"] }),
    );
    expect(flat.every((e) => !String(e.event).includes("|"))).toBe(true);
  });

  it("ends a failed run with an error event and error status", async () => {
    const thread = await server.client.threads.create();
    const events = await collect(server.client.runs.stream(thread.thread_id, "failing", { input: { messages: [] } }));
    expect(events.at(-1)).toMatchObject({
      event: "error",
      data: { error: "TypeError", message: "the tool is broken" },
    });
    expect((await server.client.threads.get(thread.thread_id)).status).toBe("error");
    const [run] = await server.client.runs.list(thread.thread_id);
    expect(run?.status).toBe("error");
    await expect(server.client.runs.wait(thread.thread_id, "failing", { input: { messages: [] } })).rejects.toThrow(
      "TypeError: the tool is broken",
    );
  });

  it("replays a resumable stream from Last-Event-ID, and everything from -1, through a join", async () => {
    const thread = await server.client.threads.create();
    const original = await collect(
      server.client.runs.stream(thread.thread_id, "steps", {
        input: { steps: 3, label: "r" },
        streamMode: ["values", "updates"],
        streamResumable: true,
      }),
    );
    const [run] = await server.client.runs.list(thread.thread_id);
    const everything = await collect(
      server.client.runs.joinStream(thread.thread_id, run!.run_id, { lastEventId: "-1" }),
    );
    expect(everything.map((e) => [e.event, e.data])).toEqual(original.map((e) => [e.event, e.data]));
    const tail = await collect(server.client.runs.joinStream(thread.thread_id, run!.run_id, { lastEventId: "3" }));
    expect(tail.map((e) => e.id)).toEqual(everything.slice(4).map((e) => e.id));
    expect(tail.length).toBe(everything.length - 4);
    const onlyUpdates = await collect(
      server.client.runs.joinStream(thread.thread_id, run!.run_id, { lastEventId: "-1", streamMode: "updates" }),
    );
    expect(new Set(onlyUpdates.map((e) => e.event))).toEqual(new Set(["metadata", "updates"]));
  });

  it("sends heartbeat comments while a run is silent", async () => {
    const thread = await server.client.threads.create();
    const response = await fetch(`${server.url}/threads/${thread.thread_id}/runs/stream`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ assistant_id: "steps", input: { steps: 1, delay_ms: 2500 }, stream_mode: "updates" }),
    });
    const events = await rawSse(response);
    expect(events.some((e) => e.comment === "heartbeat")).toBe(true);
    expect(events.filter((e) => e.event).map((e) => e.event)).toEqual(["metadata", "updates"]);
  });

  it("hands the SDK no extra event for a heartbeat after an event with an id", async () => {
    // The SDK's decoder keeps the last `id:` across events, so a blank line after a heartbeat
    // comment would reach the application as an event named "".
    const thread = await server.client.threads.create();
    const parts = await collect(
      server.client.runs.stream(thread.thread_id, "steps", {
        input: { steps: 2, delay_ms: 2500 },
        streamMode: "updates",
        streamResumable: true,
      }),
    );
    expect(parts.map((part) => part.event)).toEqual(["metadata", "updates", "updates"]);
    expect(parts.every((part) => part.id !== undefined)).toBe(true);
  });

  it("keeps a long wait alive with leading newlines that still parse as JSON", async () => {
    const thread = await server.client.threads.create();
    const response = await fetch(`${server.url}/threads/${thread.thread_id}/runs/wait`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ assistant_id: "steps", input: { steps: 1, delay_ms: 2500, label: "w" } }),
    });
    const text = await response.text();
    expect(text.startsWith("\n")).toBe(true);
    expect(JSON.parse(text)).toMatchObject({ done: ["w:1"] });
  });

  it("joins a stateless run's stream by run id", async () => {
    const run = await server.client.runs.create(null, "agent", { input: hello, streamMode: ["updates"] });
    const events = await collect(server.client.runs.joinStream(null, run.run_id));
    expect(events.map((e) => e.event)).toEqual(["metadata", "updates"]);
    expect(events[1]?.data.call_model.messages[0]).toMatchObject({ content: "You said: hello big world" });
  });
});
