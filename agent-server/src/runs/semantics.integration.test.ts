import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { Serialized } from "@langchain/core/load/serializable";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { createRedisRunBackend } from "./queue/backend.ts";
import { fastRunSettings, type RunTestServer, startRunServer } from "./testing/server.ts";
import { waitForStatus, waitUntil } from "./testing/wait.ts";
import { startWebhookReceiver } from "./testing/webhook-receiver.ts";

/** Records every LangChain run (graph, nodes, subgraphs, chat models) with its metadata. */
class RunTreeRecorder extends BaseCallbackHandler {
  name = "run-tree-recorder";
  readonly runs: { name: string; runId: string; parentRunId?: string; metadata: Record<string, unknown> }[] = [];

  /** Parameters as CallbackManager passes them (the declared signature lists them in another order). */
  override handleChainStart(
    chain: Serialized,
    _inputs: unknown,
    runId: string,
    parentRunId?: string,
    _tags?: string[],
    metadata?: Record<string, unknown>,
    _runType?: string,
    name?: string,
  ) {
    this.runs.push({ name: name ?? chain.id?.at(-1) ?? "chain", runId, parentRunId, metadata: metadata ?? {} });
  }

  override handleChatModelStart(
    llm: Serialized,
    _messages: unknown,
    runId: string,
    parentRunId?: string,
    _extraParams?: unknown,
    _tags?: string[],
    metadata?: Record<string, unknown>,
  ) {
    this.runs.push({ name: llm.id?.at(-1) ?? "model", runId, parentRunId, metadata: metadata ?? {} });
  }
}

const recorder = new RunTreeRecorder();
let server: RunTestServer;
const prefix = uniquePrefix("runs");

beforeAll(async () => {
  server = await startRunServer(testRedisUrl(), {
    prefix,
    callbacks: [recorder],
    // The webhook receiver listens on loopback, which webhooks may reach only when allowed.
    env: { WEBHOOK_ALLOWED_HOSTS: "127.0.0.1" },
  });
});
afterAll(async () => {
  await server?.close();
});

const hello = (content: string) => ({ messages: [{ role: "human", content }] });

describe("human in the loop", () => {
  it("an interrupt() leaves the thread interrupted until a run with command.resume continues it", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "approval", { input: { request: "deploy" } });
    const interrupted = await client.threads.get(thread.thread_id);
    expect(interrupted.status).toBe("interrupted");
    const [interrupts] = Object.values(interrupted.interrupts);
    expect(interrupts?.[0]?.value).toEqual({ question: "approve deploy?" });
    const state = await client.threads.getState(thread.thread_id);
    expect(state.next).toEqual(["ask"]);

    const values = await client.runs.wait(thread.thread_id, "approval", { command: { resume: "yes" } });
    expect(values).toEqual({ request: "deploy", answer: "yes (recorded)" });
    const resumed = await client.threads.get(thread.thread_id);
    expect(resumed.status).toBe("idle");
    expect(resumed.interrupts).toEqual({});
  });

  it("interrupt_before stops before the node; a run with null input continues", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "agent", { input: hello("wait"), interruptBefore: ["call_model"] });
    expect((await client.threads.get(thread.thread_id)).status).toBe("interrupted");
    expect((await client.threads.getState(thread.thread_id)).next).toEqual(["call_model"]);
    const values = (await client.runs.wait(thread.thread_id, "agent", { input: null })) as {
      messages: { content: string }[];
    };
    expect(values.messages.map((m) => m.content)).toEqual(["wait", "You said: wait"]);
  });

  it("command.update and goto steer the graph", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "approval", { input: { request: "deploy" } });
    const values = await client.runs.wait(thread.thread_id, "approval", {
      command: { update: { answer: "overridden" }, goto: "record" },
    });
    expect(values).toMatchObject({ answer: "overridden (recorded)" });
  });
});

describe("stateless runs", () => {
  it("run on a temporary thread that is deleted afterwards, unless on_completion is keep", async () => {
    const { client } = server;
    const values = (await client.runs.wait(null, "agent", { input: hello("no state") })) as {
      messages: { content: string }[];
    };
    expect(values.messages.at(-1)?.content).toBe("You said: no state");
    const response = await fetch(`${server.url}/runs/wait`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ assistant_id: "agent", input: hello("keep me"), on_completion: "keep" }),
    });
    const location = response.headers.get("content-location") as string;
    expect(location).toMatch(/^\/runs\/[0-9a-f-]{36}$/);
    await response.json();
    const threads = await client.threads.search({ metadata: { graph_id: "agent" }, limit: 1000 });
    const kept = threads.filter(
      (t) => (t.values as { messages?: { content: string }[] })?.messages?.[0]?.content === "keep me",
    );
    expect(kept.length).toBe(1);
    const deleted = threads.filter(
      (t) => (t.values as { messages?: { content: string }[] })?.messages?.[0]?.content === "no state",
    );
    expect(deleted.length).toBe(0);
  });

  it("creates a batch of runs", async () => {
    const runs = await server.client.runs.createBatch([
      { assistantId: "agent", input: hello("one") },
      { assistantId: "agent", input: hello("two") },
    ]);
    expect(runs.length).toBe(2);
    expect(new Set(runs.map((run) => run.thread_id)).size).toBe(2);
    const response = await fetch(`${server.url}/runs/batch`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: "[]",
    });
    expect(response.status).toBe(422);
  });
});

describe("run options and errors", () => {
  it("answers 404 for unknown threads and assistants, 422 for invalid bodies, and creates threads with if_not_exists", async () => {
    const { client } = server;
    const unknownThread = crypto.randomUUID();
    await expect(client.runs.create(unknownThread, "agent", { input: hello("x") })).rejects.toThrow(/404/);
    const thread = await client.threads.create();
    await expect(client.runs.create(thread.thread_id, "no-such-graph", { input: null })).rejects.toThrow(/404/);
    const invalid = await fetch(`${server.url}/threads/${thread.thread_id}/runs`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ assistant_id: "agent", stream_mode: "everything", multitask_strategy: "later" }),
    });
    expect(invalid.status).toBe(422);
    const body = (await invalid.json()) as { detail: { loc: string[] }[] };
    expect(body.detail.map((issue) => issue.loc.join("."))).toEqual(
      expect.arrayContaining(["body.stream_mode", "body.multitask_strategy"]),
    );
    const created = await client.runs.wait(unknownThread, "agent", {
      input: hello("new"),
      ifNotExists: "create",
      metadata: { origin: "if_not_exists" },
    });
    expect(created).toMatchObject({ messages: [{ content: "new" }, { content: "You said: new" }] });
    expect((await client.threads.get(unknownThread)).metadata).toMatchObject({
      graph_id: "agent",
      assistant_id: expect.any(String),
      origin: "if_not_exists",
    });
  });

  it("starts from an earlier checkpoint given checkpoint_id (time travel)", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "agent", { input: hello("first") });
    const afterFirst = await client.threads.getState(thread.thread_id);
    await client.runs.wait(thread.thread_id, "agent", { input: hello("second") });
    const forked = (await client.runs.wait(thread.thread_id, "agent", {
      input: hello("instead"),
      checkpointId: afterFirst.checkpoint.checkpoint_id as string,
    })) as { messages: { content: string }[] };
    expect(forked.messages.map((m) => m.content)).toEqual(["first", "You said: first", "instead", "You said: instead"]);
  });

  it("joins a finished run whose event log is gone from the run record and thread", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, "agent", { input: hello("old") });
    await client.runs.join(thread.thread_id, run.run_id);
    // What expiry does to the log, through a connection of its own to the server's run keys.
    const backend = await createRedisRunBackend({ url: testRedisUrl(), prefix: `${prefix}runs:` });
    await backend.events.delete([run.run_id]);
    await backend.close();
    const started = Date.now();
    const values = (await client.runs.join(thread.thread_id, run.run_id)) as { messages: { content: string }[] };
    expect(values.messages.map((m) => m.content)).toEqual(["old", "You said: old"]);
    // Answered from the record at once, not after a heartbeat's silence.
    expect(Date.now() - started).toBeLessThan(fastRunSettings.heartbeatMs);
  });

  it("stops the run and leaves no checkpoints behind when the thread is deleted while its run executes", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, "steps", { input: { steps: 3, delay_ms: 200, label: "d" } });
    await waitForStatus(client, thread.thread_id, run.run_id, "running");
    const service = server.runs.service();
    const running = await service.get(undefined, run.run_id);
    await client.threads.delete(thread.thread_id);
    const outcome = await service.outcome(running, AbortSignal.timeout(10_000), 1000);
    expect(outcome?.status).toBe("deleted");
    expect(await service.find(run.run_id)).toBeUndefined();
    const left = await server.server.ctx.storage.checkpointer.getTuple({
      configurable: { thread_id: thread.thread_id },
    });
    expect(left).toBeUndefined();
  });

  it("delays a run by after_seconds", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, "agent", { input: hello("later"), afterSeconds: 1 });
    expect((await client.runs.get(thread.thread_id, run.run_id)).status).toBe("pending");
    expect((await client.threads.get(thread.thread_id)).status).toBe("busy");
    await client.runs.join(thread.thread_id, run.run_id);
    expect((await client.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
    // The run's first checkpoint shows when it started executing: not before the delay.
    const history = await client.threads.getHistory(thread.thread_id);
    expect(history.length).toBeGreaterThan(0);
    const firstWrite = Math.min(...history.map((state) => Date.parse(state.created_at ?? "")));
    expect(firstWrite - Date.parse(run.created_at)).toBeGreaterThanOrEqual(1000);
  });

  it("lists runs with paging and status filter, gets and deletes them", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "agent", { input: hello("a") });
    await client.runs.wait(thread.thread_id, "failing", { input: hello("b") }).catch(() => undefined);
    const runs = await client.runs.list(thread.thread_id);
    expect(runs.map((run) => run.status)).toEqual(["error", "success"]);
    expect((await client.runs.list(thread.thread_id, { status: "success" })).length).toBe(1);
    expect((await client.runs.list(thread.thread_id, { limit: 1, offset: 1 })).map((r) => r.status)).toEqual([
      "success",
    ]);
    await client.runs.delete(thread.thread_id, runs[0]!.run_id);
    expect((await client.runs.list(thread.thread_id)).length).toBe(1);
    await expect(client.runs.get(thread.thread_id, runs[0]!.run_id)).rejects.toThrow(/404/);
  });

  it("posts the finished run with its values to the webhook, retrying a failing receiver", async () => {
    const receiver = await startWebhookReceiver();
    receiver.answers.push(503);
    try {
      const thread = await server.client.threads.create();
      await server.client.runs.wait(thread.thread_id, "agent", {
        input: hello("hook"),
        webhook: receiver.url,
      });
      await waitUntil(async () => receiver.received.length >= 2, "the webhook receives the run again after a 503");
      expect(receiver.received).toHaveLength(2);
      const delivered = receiver.received[1]?.body;
      expect(delivered).toMatchObject({ thread_id: thread.thread_id, status: "success" });
      expect(delivered?.values).toMatchObject({ messages: [{ content: "hook" }, { content: "You said: hook" }] });
      expect(delivered).toHaveProperty("webhook_sent_at");
    } finally {
      await receiver.close();
    }
  });
});

describe("tracing", () => {
  it("puts thread_id in the metadata of the run and of every child run, subgraphs included", async () => {
    const thread = await server.client.threads.create();
    recorder.runs.length = 0;
    const run = await server.client.runs.create(thread.thread_id, "nested", { input: hello("trace") });
    expect(run.metadata).toMatchObject({ thread_id: thread.thread_id });
    await server.client.runs.join(thread.thread_id, run.run_id);
    const root = recorder.runs.find((r) => r.runId === run.run_id);
    expect(root?.parentRunId).toBeUndefined();
    const tree = [root!];
    for (let grew = true; grew; ) {
      const ids = new Set(tree.map((r) => r.runId));
      const children = recorder.runs.filter((r) => r.parentRunId && ids.has(r.parentRunId) && !ids.has(r.runId));
      tree.push(...children);
      grew = children.length > 0;
    }
    const names = tree.map((r) => r.name);
    expect(names).toEqual(expect.arrayContaining(["delegate", "child_model", "EchoChatModel"]));
    for (const child of tree) expect(child.metadata).toMatchObject({ thread_id: thread.thread_id });
  });
});

describe("thread stream", () => {
  it("streams every run of the thread, one after the other", async () => {
    const { client } = server;
    const thread = await client.threads.create();
    const controller = new AbortController();
    const response = await fetch(`${server.url}/threads/${thread.thread_id}/stream`, { signal: controller.signal });
    const reader = response.body!.getReader();
    await client.runs.wait(thread.thread_id, "agent", { input: hello("first") });
    await client.runs.wait(thread.thread_id, "agent", { input: hello("second") });
    let text = "";
    const decoder = new TextDecoder();
    while ((text.match(/event: metadata/g) ?? []).length < 2 || !text.includes("You said: second")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    controller.abort();
    expect((text.match(/event: metadata/g) ?? []).length).toBe(2);
    expect(text.indexOf("You said: first")).toBeLessThan(text.indexOf("You said: second"));
  });
});
