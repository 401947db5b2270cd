import { afterEach, describe, expect, it } from "vitest";
import { eventually } from "../../../testing/kubelet/cluster.ts";
import { decodeTraceExport, type ExportedSpan } from "../../../testing/otlp.ts";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { startTraceReceiver, type TraceReceiver } from "../../../testing/trace-receiver.ts";
import { type ServerProcess, spawnServer } from "../runs/testing/process.ts";

/**
 * Runs traced out of a real agent-server process: to a LangSmith-compatible endpoint and to an
 * OTLP collector, both stood in for by a receiver that keeps what it is sent.
 */

const hello = (content: string) => ({ messages: [{ role: "human", content }] });
const API_KEY = "lsv2-tracing-test-secret";

let server: ServerProcess | undefined;
let receiver: TraceReceiver | undefined;
afterEach(async () => {
  await server?.kill();
  await receiver?.close();
  server = undefined;
  receiver = undefined;
});

/** Runs the subgraph fixture (graph → node → subgraph → chat model) on a new thread and waits for it. */
async function runNested(process: ServerProcess) {
  const thread = await process.client.threads.create();
  const run = await process.client.runs.create(thread.thread_id, "nested", { input: hello("trace me") });
  await process.client.runs.join(thread.thread_id, run.run_id);
  const failing = await process.client.runs.create(thread.thread_id, "failing", { input: hello("fail") });
  await process.client.runs.join(thread.thread_id, failing.run_id);
  return { threadId: thread.thread_id, runId: run.run_id, failingRunId: failing.run_id };
}

interface LangSmithRun {
  id: string;
  name: string;
  parent_run_id?: string;
  trace_id?: string;
  error?: string;
  extra?: { metadata?: Record<string, unknown> };
}

/** Run creates and updates from LangSmith multipart ingest bodies, merged per run id. */
async function langSmithRuns(received: TraceReceiver): Promise<Map<string, LangSmithRun>> {
  const runs = new Map<string, LangSmithRun>();
  for (const request of received.requests.filter((r) => r.path === "/runs/multipart")) {
    const form = await new Response(new Uint8Array(request.body), {
      headers: { "content-type": String(request.headers["content-type"]) },
    }).formData();
    for (const [name, value] of form) {
      const [, id, part] = name.split(".") as [string, string, string | undefined];
      const json = JSON.parse(typeof value === "string" ? value : await value.text()) as unknown;
      const run = runs.get(id) ?? ({ id } as LangSmithRun);
      // The run itself, then its large fields (`inputs`, `outputs`, `extra`, `error` …) as parts of their own.
      Object.assign(run, part === undefined ? json : { [part]: json });
      runs.set(id, run);
    }
  }
  return runs;
}

describe("tracing to LangSmith (LANGSMITH_TRACING)", () => {
  it("sends every run of the tree with thread_id in its metadata, flushed on shutdown, and never logs the key", async () => {
    receiver = await startTraceReceiver();
    server = await spawnServer(testRedisUrl(), uniquePrefix("trace"), {
      LANGSMITH_TRACING: "true",
      LANGSMITH_ENDPOINT: receiver.url,
      LANGSMITH_API_KEY: API_KEY,
      LANGSMITH_PROJECT: "agentplane-tracing-test",
      LOG_LEVEL: "info",
    });
    const info = (await (await fetch(`${server.url}/info`)).json()) as { flags: Record<string, boolean> };
    expect(info.flags.langsmith).toBe(true);
    const { threadId, runId, failingRunId } = await runNested(server);
    // A graceful stop delivers whatever the batching still holds.
    await server.stop();
    const runs = await langSmithRuns(receiver);

    const root = runs.get(runId);
    expect(root, "the graph's root run has the agent-server run id").toBeDefined();
    expect(root?.parent_run_id).toBeUndefined();
    const tree = [...runs.values()].filter((run) => run.trace_id === runId);
    expect(tree.map((run) => run.name)).toEqual(expect.arrayContaining(["delegate", "child_model", "EchoChatModel"]));
    for (const run of tree) expect(run.extra?.metadata, run.name).toMatchObject({ thread_id: threadId, run_id: runId });
    expect(runs.get(failingRunId)?.error).toBeTruthy();

    const posts = receiver.requests.filter((r) => r.method === "POST");
    expect(posts.every((r) => r.headers["x-api-key"] === API_KEY)).toBe(true);
    expect(String(posts[0]?.body)).toContain("agentplane-tracing-test");
    expect(server.logs()).toContain("tracing runs to LangSmith");
    expect(server.logs()).not.toContain(API_KEY);
  });
});

describe("OpenTelemetry export (OTEL_EXPORTER_OTLP_ENDPOINT)", () => {
  it("exports one span per run, parented as the run tree, with thread_id as the conversation id", async () => {
    receiver = await startTraceReceiver();
    server = await spawnServer(testRedisUrl(), uniquePrefix("otel"), {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: "agentplane-otel-test",
    });
    const info = (await (await fetch(`${server.url}/info`)).json()) as { flags: Record<string, boolean> };
    expect(info.flags.langsmith).toBe(false);
    const { threadId, runId, failingRunId } = await runNested(server);
    // The batch processor holds spans for 5 s by default: stopping the server sends them.
    await server.stop();
    const spans: ExportedSpan[] = receiver.requests
      .filter((r) => r.path === "/v1/traces")
      .flatMap((r) => decodeTraceExport(r.body));

    const root = spans.find((s) => !s.parentSpanId && s.attributes["langsmith.metadata.run_id"] === runId);
    expect(root?.resource["service.name"]).toBe("agentplane-otel-test");
    const trace = spans.filter((s) => s.traceId === root?.traceId);
    const ids = new Set(trace.map((s) => s.spanId));
    for (const span of trace) if (span !== root) expect(ids.has(span.parentSpanId), span.name).toBe(true);
    expect(trace.map((s) => s.name)).toEqual(expect.arrayContaining(["delegate", "child_model", "EchoChatModel"]));
    for (const span of trace) {
      expect(span.attributes, span.name).toMatchObject({
        "gen_ai.conversation.id": threadId,
        "langsmith.metadata.thread_id": threadId,
      });
    }
    expect(trace.find((s) => s.name === "EchoChatModel")?.attributes["langsmith.span.kind"]).toBe("llm");
    const failed = spans.find((s) => !s.parentSpanId && s.attributes["langsmith.metadata.run_id"] === failingRunId);
    expect(failed?.statusCode).toBe(2);
  });

  it("keeps running runs when the collector rejects the spans, and logs why", async () => {
    receiver = await startTraceReceiver();
    server = await spawnServer(testRedisUrl(), uniquePrefix("otel"), {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/reject`,
      OTEL_BSP_SCHEDULE_DELAY: "50",
    });
    const thread = await server.client.threads.create();
    const values = (await server.client.runs.wait(thread.thread_id, "agent", { input: hello("still here") })) as {
      messages: { content: string }[];
    };
    expect(values.messages.at(-1)?.content).toBe("You said: still here");
    await eventually(() => server?.logs().includes("OpenTelemetry:"), 10_000, "the rejected export to be logged");
    expect(receiver.requests.some((r) => r.path === "/reject")).toBe(true);
  });
});
