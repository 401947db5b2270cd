import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { exampleConfig, fixtureConfig, startTestServer } from "../graphs/testing/server.ts";
import type { AgentServer } from "../server.ts";
import { ThreadService } from "./service.ts";

let server: AgentServer;
let client: Client;

const human = (content: string, id: string) => ({ type: "human", content, id });
const ai = (content: string, id: string) => ({ type: "ai", content, id });

/** The superstep shape `threads.copy`/export tools produce: input, start, then the node's answer. */
const conversation = [
  { updates: [{ values: { messages: [human("hi", "h1")] }, asNode: "__input__" }] },
  { updates: [{ values: { messages: [human("hi", "h1")] }, asNode: "__start__" }] },
  { updates: [{ values: { messages: [ai("You said: hi", "a1")] }, asNode: "call_model" }] },
];
const wireConversation = conversation.map((step) => ({
  updates: step.updates.map(({ asNode, ...update }) => ({ ...update, as_node: asNode })),
}));

beforeAll(async () => {
  server = await startTestServer(exampleConfig, { redisUrl: testRedisUrl(), prefix: uniquePrefix("state") });
  client = new Client({ apiUrl: server.url });
});
afterAll(() => server?.close());

const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("thread state", () => {
  it("is empty for a thread that never ran", async () => {
    const thread = await client.threads.create();
    const state = await client.threads.getState(thread.thread_id);
    expect(state).toMatchObject({ values: {}, next: [], tasks: [], checkpoint: null, parent_checkpoint: null });
    expect(await client.threads.getHistory(thread.thread_id)).toEqual([]);
  });

  it("replays supersteps on create, one checkpoint each, and exposes messages as plain objects", async () => {
    const thread = await client.threads.create({ graphId: "agent", supersteps: conversation });
    expect((thread.values as any).messages.map((m: any) => [m.type, m.content])).toEqual([
      ["human", "hi"],
      ["ai", "You said: hi"],
    ]);
    const state = await client.threads.getState(thread.thread_id);
    expect(state.next).toEqual([]);
    expect(state.checkpoint).toMatchObject({ thread_id: thread.thread_id, checkpoint_ns: "" });
    expect((state as any).checkpoint_id).toBe(state.checkpoint.checkpoint_id);
    expect((state as any).parent_checkpoint_id).toBe(state.parent_checkpoint?.checkpoint_id);
    expect(state.metadata).toMatchObject({ source: "update", step: 1 });
    const [question, answer] = (state.values as any).messages;
    expect(question).toEqual({
      type: "human",
      content: "hi",
      id: "h1",
      name: null,
      additional_kwargs: {},
      response_metadata: {},
    });
    expect(answer).toMatchObject({ type: "ai", id: "a1", tool_calls: [], invalid_tool_calls: [] });

    const history = await client.threads.getHistory(thread.thread_id);
    expect(history.map((s) => [s.metadata?.step, s.next])).toEqual([
      [1, []],
      [0, ["call_model"]],
      [-1, ["__start__"]],
    ]);
    expect(history.at(-1)?.metadata?.source).toBe("input");
  });

  it("answers 400 for supersteps that name an unknown node, and for threads without a graph", async () => {
    const bad = await post("/threads", {
      metadata: { graph_id: "agent" },
      supersteps: [{ updates: [{ values: {}, as_node: "no_such_node" }] }],
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).detail).toMatch(/no_such_node/);
    const noGraph = await post("/threads", { supersteps: wireConversation });
    expect(noGraph.status).toBe(400);
    expect(((await noGraph.json()) as any).detail).toMatch(/has no graph ID/);
  });

  it("reads the state at a checkpoint by id and by checkpoint object", async () => {
    const thread = await client.threads.create({ graphId: "agent", supersteps: conversation });
    const [, middle] = await client.threads.getHistory(thread.thread_id);
    const byId = await client.threads.getState(thread.thread_id, middle!.checkpoint.checkpoint_id!);
    expect(byId.next).toEqual(["call_model"]);
    expect((byId.values as any).messages).toHaveLength(1);
    const byObject = await client.threads.getState(thread.thread_id, middle!.checkpoint);
    expect(byObject.checkpoint).toEqual(byId.checkpoint);
  });

  it("pages history with limit and before (id or checkpoint object) and filters by metadata", async () => {
    const thread = await client.threads.create({ graphId: "agent", supersteps: conversation });
    const all = await client.threads.getHistory(thread.thread_id);
    const [newest, middle, oldest] = all;
    const page = await client.threads.getHistory(thread.thread_id, {
      limit: 1,
      before: { configurable: newest!.checkpoint },
    });
    expect(page.map((s) => s.checkpoint.checkpoint_id)).toEqual([middle!.checkpoint.checkpoint_id]);
    const byCheckpoint = (await (
      await post(`/threads/${thread.thread_id}/history`, { limit: 1, before: newest!.checkpoint })
    ).json()) as any[];
    expect(byCheckpoint.map((s) => s.checkpoint.checkpoint_id)).toEqual([middle!.checkpoint.checkpoint_id]);
    const viaGet = (await (
      await fetch(
        `${server.url}/threads/${thread.thread_id}/history?limit=5&before=${middle!.checkpoint.checkpoint_id}`,
      )
    ).json()) as any[];
    expect(viaGet.map((s) => s.checkpoint.checkpoint_id)).toEqual([oldest!.checkpoint.checkpoint_id]);
    const inputs = await client.threads.getHistory(thread.thread_id, { metadata: { source: "input" } });
    expect(inputs.map((s) => s.checkpoint.checkpoint_id)).toEqual([oldest!.checkpoint.checkpoint_id]);
  });

  it("updates state as a node, applying reducers, and keeps thread.values in sync", async () => {
    const thread = await client.threads.create({ graphId: "agent", supersteps: conversation });
    const updated = await client.threads.updateState(thread.thread_id, {
      values: { messages: [ai("edited", "a1"), human("again", "h2")] },
      asNode: "call_model",
    });
    const { checkpoint } = updated as any;
    expect(checkpoint).toMatchObject({ thread_id: thread.thread_id, checkpoint_ns: "" });
    expect(updated.configurable).toEqual(checkpoint);
    const state = await client.threads.getState(thread.thread_id);
    expect(state.checkpoint.checkpoint_id).toBe(checkpoint.checkpoint_id);
    expect((state.values as any).messages.map((m: any) => m.content)).toEqual(["hi", "edited", "again"]);
    const stored = await client.threads.get(thread.thread_id);
    expect((stored.values as any).messages).toHaveLength(3);

    const [, previous] = await client.threads.getHistory(thread.thread_id);
    const fork = await client.threads.updateState(thread.thread_id, {
      values: { messages: [human("fork", "h3")] },
      asNode: "call_model",
      checkpointId: previous!.checkpoint.checkpoint_id!,
    });
    const forked = await client.threads.getState(thread.thread_id, fork.configurable!.checkpoint_id as string);
    expect(forked.parent_checkpoint?.checkpoint_id).toBe(previous!.checkpoint.checkpoint_id);
  });

  it("refuses updates on busy threads, threads without a graph, unknown threads and bad input", async () => {
    const thread = await client.threads.create({ graphId: "agent", supersteps: conversation });
    await server.ctx.storage.threads.update(thread.thread_id, { status: "busy" });
    const busy = await post(`/threads/${thread.thread_id}/state`, { values: {} });
    expect(busy.status).toBe(409);
    expect(await busy.json()).toEqual({ detail: "Thread is busy" });

    const bare = await client.threads.create();
    const noGraph = await post(`/threads/${bare.thread_id}/state`, { values: {} });
    expect(noGraph.status).toBe(400);
    expect(await noGraph.json()).toEqual({ detail: `Thread ${bare.thread_id} has no graph ID` });

    const missing = await fetch(`${server.url}/threads/00000000-0000-4000-8000-000000000000/state`);
    expect(missing.status).toBe(404);
    const badId = await fetch(`${server.url}/threads/not-a-uuid/history`);
    expect(badId.status).toBe(422);
    const badLimit = await post(`/threads/${bare.thread_id}/history`, { limit: 0 });
    expect(badLimit.status).toBe(422);

    const idle = await client.threads.create({ graphId: "agent", supersteps: conversation });
    const unknownNode = await post(`/threads/${idle.thread_id}/state`, { values: {}, as_node: "nope" });
    expect(unknownNode.status).toBe(400);
    expect((await client.threads.getHistory(idle.thread_id)).length).toBe(3);
  });
});

describe("state and history of a long conversation over HTTP", () => {
  it("answer the state as stored, with the headers res.json sends and no ETag", async () => {
    const thread = await client.threads.create({ graphId: "agent" });
    for (let i = 0; i < 6; i++) {
      await client.runs.wait(thread.thread_id, "agent", { input: { messages: [human(`question ${i}`, `h${i}`)] } });
    }
    const response = await fetch(`${server.url}/threads/${thread.thread_id}/state`);
    const body = await response.text();
    expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(Number(response.headers.get("content-length"))).toBe(Buffer.byteLength(body));
    expect(response.headers.get("etag")).toBeNull();
    const state = JSON.parse(body);
    expect(state.values.messages.map((m: { type: string }) => m.type)).toEqual(Array(6).fill(["human", "ai"]).flat());
    // The run's answer (made from the stored texts) and the state read agree with a fresh conversion.
    const threads = new ThreadService(server.ctx);
    expect(state).toEqual(await threads.state(thread.thread_id, {}, false));
    const history = (await (await post(`/threads/${thread.thread_id}/history`, { limit: 5 })).json()) as {
      checkpoint_id: string;
    }[];
    expect(history).toHaveLength(5);
    expect(history[0]).toEqual(state);
    for (const past of history) {
      expect(past).toEqual(await threads.state(thread.thread_id, { checkpoint_id: past.checkpoint_id }, false));
    }
  });
});

describe("thread state with subgraphs and interrupts", () => {
  let fixtures: AgentServer;
  beforeAll(async () => {
    fixtures = await startTestServer(fixtureConfig);
  });
  afterAll(() => fixtures?.close());

  it("shows the pending subgraph task, its interrupt and (with subgraphs) its nested state", async () => {
    const sdk = new Client({ apiUrl: fixtures.url });
    const thread = await sdk.threads.create({ graphId: "hitl" });
    const graph = await fixtures.ctx.graphs.get("hitl");
    await graph.invoke({ topic: "?" }, { configurable: { thread_id: thread.thread_id } });

    const state = await sdk.threads.getState(thread.thread_id);
    expect(state.next).toEqual(["asking"]);
    const [task] = state.tasks;
    expect(task).toMatchObject({ name: "asking", error: null, state: null });
    expect(task!.interrupts).toEqual([{ id: expect.any(String), value: "which topic?" }]);
    expect(task!.checkpoint).toMatchObject({
      thread_id: thread.thread_id,
      checkpoint_ns: expect.stringMatching(/^asking:/),
    });
    expect((state as any).interrupts).toEqual(task!.interrupts);

    const nested = await sdk.threads.getState(thread.thread_id, undefined, { subgraphs: true });
    const sub = nested.tasks[0]!.state as any;
    expect(sub.next).toEqual(["ask"]);
    expect(sub.checkpoint.checkpoint_ns).toMatch(/^asking:/);
  });
});
