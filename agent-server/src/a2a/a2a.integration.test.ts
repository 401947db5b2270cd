import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { type ExtensionTestServer, startExtensionServer } from "../long-term-store/testing/server.ts";
import { eventually } from "../runs/testing/wait.ts";

interface RpcResponse {
  jsonrpc: "2.0";
  id: string | number | null;
  result?: Record<string, any>;
  error?: { code: number; message: string };
}

const userMessage = (text: string, extra: Record<string, unknown> = {}) => ({
  kind: "message",
  messageId: crypto.randomUUID(),
  role: "user",
  parts: [{ kind: "text", text }],
  ...extra,
});

describe("A2A JSON-RPC (raw)", () => {
  let app: ExtensionTestServer;
  let seq = 0;
  const rpc = async (assistant: string, method: string, params: unknown): Promise<RpcResponse> => {
    const response = await fetch(`${app.url}/a2a/${assistant}`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++seq, method, params }),
    });
    expect(response.status).toBe(200);
    return (await response.json()) as RpcResponse;
  };

  beforeAll(async () => {
    app = await startExtensionServer(testRedisUrl(), { prefix: uniquePrefix("a2a") });
  });
  afterAll(() => app?.close());

  it("serves an agent card per assistant", async () => {
    const card = (await (await fetch(`${app.url}/.well-known/agent-card.json?assistant_id=agent`)).json()) as Record<
      string,
      any
    >;
    expect(card).toMatchObject({
      protocolVersion: "0.3.0",
      name: "agent",
      description: "Chat agent that echoes the last human message",
      preferredTransport: "JSONRPC",
      capabilities: { streaming: true },
    });
    expect(card.url).toMatch(/\/a2a\/[0-9a-f-]{36}$/);
    expect((await fetch(`${app.url}/.well-known/agent-card.json?assistant_id=nope`)).status).toBe(404);
    expect((await fetch(`${app.url}/.well-known/agent-card.json`)).status).toBe(422);
  });

  it("message/send runs the assistant on the context's thread; tasks/get finds the run", async () => {
    const first = await rpc("agent", "message/send", { message: userMessage("hello") });
    const task = first.result as Record<string, any>;
    expect(task).toMatchObject({ kind: "task", status: { state: "completed" } });
    expect(task.artifacts[0].parts[0]).toEqual({ kind: "text", text: "You said: hello" });
    const thread = await app.client.threads.get(task.contextId);
    expect(thread.status).toBe("idle");

    const second = await rpc("agent", "message/send", { message: userMessage("again", { contextId: task.contextId }) });
    expect(second.result?.contextId).toBe(task.contextId);
    expect(second.result?.artifacts[0].parts[0].text).toBe("You said: again");
    const state = await app.client.threads.getState<{ messages: unknown[] }>(task.contextId);
    expect(state.values.messages).toHaveLength(4);

    const fetched = await rpc("agent", "tasks/get", { id: task.id });
    expect(fetched.result).toMatchObject({ id: task.id, contextId: task.contextId, status: { state: "completed" } });
  });

  it("an interrupt is input-required; answering with taskId resumes it", async () => {
    const asked = await rpc("approval", "message/send", {
      message: {
        kind: "message",
        messageId: "m1",
        role: "user",
        parts: [{ kind: "data", data: { request: "deploy" } }],
      },
    });
    expect(asked.result?.status.state).toBe("input-required");
    expect(asked.result?.status.message.parts[0].text).toContain("approve deploy?");
    const answered = await rpc("approval", "message/send", {
      message: userMessage("yes", { taskId: asked.result?.id, contextId: asked.result?.contextId }),
    });
    expect(answered.result?.status.state).toBe("completed");
    expect(answered.result?.artifacts[0].parts[0].data).toMatchObject({ answer: "yes" });
  });

  it("message/stream answers with SSE JSON-RPC responses ending in a final status", async () => {
    const response = await fetch(`${app.url}/a2a/agent`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: "s1",
        method: "message/stream",
        params: { message: userMessage("stream me") },
      }),
    });
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const events = (await response.text())
      .split("\n\n")
      .filter((chunk) => chunk.startsWith("data: "))
      .map((chunk) => JSON.parse(chunk.slice(6)) as RpcResponse);
    expect(events.every((event) => event.id === "s1")).toBe(true);
    const kinds = events.map((event) => event.result?.kind);
    expect(kinds).toEqual(["task", "status-update", "artifact-update", "status-update"]);
    expect(events[2]?.result?.artifact.parts[0].text).toBe("You said: stream me");
    expect(events[3]?.result).toMatchObject({ final: true, status: { state: "completed" } });
  });

  it("tasks/cancel stops a running task and refuses finished ones", async () => {
    const started = await rpc("sleeper", "message/send", {
      message: {
        kind: "message",
        messageId: "m2",
        role: "user",
        parts: [{ kind: "data", data: { delay_ms: 20_000 } }],
      },
      configuration: { blocking: false },
    });
    expect(["submitted", "working"]).toContain(started.result?.status.state);
    const cancelled = await rpc("sleeper", "tasks/cancel", { id: started.result?.id });
    expect(cancelled.result?.status.state).toBe("canceled");
    const state = await eventually(
      async () => (await rpc("sleeper", "tasks/get", { id: started.result?.id })).result?.status.state,
      (current) => current === "canceled",
      5000,
    );
    expect(state).toBe("canceled");
    const done = await rpc("agent", "message/send", { message: userMessage("done") });
    const refused = await rpc("agent", "tasks/cancel", { id: done.result?.id });
    expect(refused.error?.code).toBe(-32002);
    const missing = await rpc("agent", "tasks/get", { id: crypto.randomUUID() });
    expect(missing.error?.code).toBe(-32001);
    const foreign = await rpc("adder", "tasks/get", { id: done.result?.id });
    expect(foreign.error?.code).toBe(-32001);
  });

  it("answers the v1.0 method names in v1.0 shapes: wrapped results, upper-case enums, parts without kind", async () => {
    const v1Message = (parts: unknown[], extra: Record<string, unknown> = {}) => ({
      messageId: crypto.randomUUID(),
      role: "ROLE_USER",
      parts,
      ...extra,
    });
    // Empty ids, as clients that write out proto3 defaults send them, mean a new conversation.
    const sent = await rpc("agent", "SendMessage", {
      message: v1Message([{ text: "hello v1" }], { contextId: "", taskId: "" }),
    });
    const task = sent.result?.task as Record<string, any>;
    expect(task).toMatchObject({ status: { state: "TASK_STATE_COMPLETED" } });
    expect(task).not.toHaveProperty("kind");
    expect(task.artifacts[0].parts).toEqual([{ text: "You said: hello v1" }]);
    expect((await rpc("agent", "GetTask", { id: task.id })).result).toMatchObject({
      id: task.id,
      contextId: task.contextId,
      status: { state: "TASK_STATE_COMPLETED" },
    });

    const asked = await rpc("approval", "SendMessage", { message: v1Message([{ data: { request: "ship" } }]) });
    expect(asked.result?.task.status).toMatchObject({
      state: "TASK_STATE_INPUT_REQUIRED",
      message: { role: "ROLE_AGENT", parts: [{ text: expect.stringContaining("approve ship?") }] },
    });
    const answered = await rpc("approval", "SendMessage", {
      message: v1Message([{ text: "yes" }], { taskId: asked.result?.task.id }),
    });
    expect(answered.result?.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(answered.result?.task.artifacts[0].parts[0].data).toMatchObject({ answer: "yes" });

    const started = await rpc("sleeper", "SendMessage", {
      message: v1Message([{ data: { delay_ms: 20_000 } }]),
      configuration: { returnImmediately: true },
    });
    expect(["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]).toContain(started.result?.task.status.state);
    const cancelled = await rpc("sleeper", "CancelTask", { id: started.result?.task.id });
    expect(cancelled.result?.status.state).toBe("TASK_STATE_CANCELED");

    for (const message of [
      v1Message([{ text: "lower-case role" }], { role: "user" }),
      v1Message([{ text: "two contents", data: {} }]),
      v1Message([{ data: ["not", "an", "object"] }]),
      v1Message([]),
    ]) {
      expect((await rpc("agent", "SendMessage", { message })).error?.code).toBe(-32602);
    }
  });

  it("answers malformed requests with JSON-RPC error objects, never a 5xx", async () => {
    const post = (body: string, assistant = "agent") =>
      fetch(`${app.url}/a2a/${assistant}`, { method: "POST", headers: { "content-type": "application/json" }, body });
    const parse = await post("{oops");
    expect(parse.status).toBe(400);
    expect(await parse.json()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
    const envelope = await post(JSON.stringify({ id: 3, method: "message/send" }));
    expect(envelope.status).toBe(400);
    expect(await envelope.json()).toMatchObject({ id: 3, error: { code: -32600 } });
    const unknown = await rpc("agent", "tasks/resubscribe", { id: "x" });
    expect(unknown.error?.code).toBe(-32601);
    const invalid = await rpc("agent", "message/send", { message: { role: "user" } });
    expect(invalid.error?.code).toBe(-32602);
    const badContext = await rpc("agent", "message/send", { message: userMessage("hi", { contextId: "not-a-uuid" }) });
    expect(badContext.error?.code).toBe(-32602);
    const noAssistant = await post(
      JSON.stringify({ jsonrpc: "2.0", id: 4, method: "tasks/get", params: { id: "x" } }),
      "ghost",
    );
    expect(noAssistant.status).toBe(404);
    expect(await noAssistant.json()).toMatchObject({ jsonrpc: "2.0", id: 4, error: { code: -32602 } });
  });
});

const clientScript = new URL("./testing/client.ts", import.meta.url).pathname;

describe("A2A with the official @a2a-js/sdk client", () => {
  let app: ExtensionTestServer;
  beforeAll(async () => {
    app = await startExtensionServer(testRedisUrl(), { prefix: uniquePrefix("a2a-sdk") });
  });
  afterAll(() => app?.close());

  it.each(["1.0", "0.3"])("resolves the agent card, sends, gets and streams over A2A %s JSON-RPC", async (version) => {
    const { stdout } = await promisify(execFile)(process.execPath, [clientScript, app.url, "agent", version]);
    const { card, sent, fetched, streamed } = JSON.parse(stdout) as Record<string, any>;
    expect(card.supportedInterfaces.map((i: any) => [i.protocolBinding, i.protocolVersion])).toEqual([
      ["JSONRPC", "1.0"],
      ["JSONRPC", "0.3"],
    ]);
    // the SDK maps v0.3 states to its enum: 1 submitted, 2 working, 3 completed
    expect(sent.status.state).toBe(3);
    expect(sent.artifacts[0].parts[0].content).toEqual({ $case: "text", value: "You said: hello from the SDK" });
    expect(fetched).toMatchObject({ id: sent.id, contextId: sent.contextId, status: { state: 3 } });
    expect(streamed.map((event: any) => event.payload.$case)).toEqual([
      "task",
      "statusUpdate",
      "artifactUpdate",
      "statusUpdate",
    ]);
    expect(streamed[2].payload.value.artifact.parts[0].content.value).toBe("You said: streamed");
    expect(streamed[3].payload.value.status.state).toBe(3);
    expect(streamed[0].payload.value.contextId).toBe(sent.contextId);
    const state = await app.client.threads.getState<{ messages: unknown[] }>(sent.contextId);
    expect(state.values.messages).toHaveLength(4);
  });
});
