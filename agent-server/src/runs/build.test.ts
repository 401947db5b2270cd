import { describe, expect, it } from "vitest";
import type { Assistant, Thread } from "../storage/types.ts";
import { buildRun } from "./build.ts";

const assistant: Assistant = {
  assistant_id: "a1",
  graph_id: "agent",
  config: { tags: ["assistant"], configurable: { model: "small", temperature: 0 } },
  context: { tone: "dry", lang: "en" },
  metadata: { created_by: "system" },
  version: 1,
  name: "agent",
  description: null,
  created_at: "2026-01-01T00:00:00.000Z",
  updated_at: "2026-01-01T00:00:00.000Z",
};

const thread: Thread = {
  thread_id: "t1",
  created_at: "2026-01-01T00:00:00.000Z",
  updated_at: "2026-01-01T00:00:00.000Z",
  state_updated_at: "2026-01-01T00:00:00.000Z",
  metadata: { graph_id: "agent", source: "thread" },
  status: "idle",
  config: { configurable: { model: "medium", user: "u1" } },
  values: null,
  interrupts: {},
};

describe("buildRun", () => {
  it("merges assistant, thread and request settings (metadata too), request last, server ids on top", () => {
    const run = buildRun(
      {
        assistant_id: "agent",
        input: { q: 1 },
        config: { configurable: { model: "large", run_id: "spoofed" } },
        context: { lang: "fr" },
        metadata: { source: "test" },
        checkpoint_id: "c1",
        stream_mode: ["updates"],
      },
      assistant,
      thread,
      {
        runId: "r1",
        temporary: false,
        now: "2026-01-02T00:00:00.000Z",
        // Already filtered by http.configurable_headers; only single values are forwarded.
        headers: { "x-request-id": "abc", "user-agent": "sdk", "x-list": ["a", "b"] },
      },
    );
    expect(run.kwargs.config.configurable).toEqual({
      model: "large",
      temperature: 0,
      user: "u1",
      "x-request-id": "abc",
      "user-agent": "sdk",
      checkpoint_id: "c1",
      run_id: "r1",
      thread_id: "t1",
      graph_id: "agent",
      assistant_id: "a1",
    });
    expect(run.kwargs.config.tags).toEqual(["assistant"]);
    expect(run.kwargs.context).toEqual({ tone: "dry", lang: "fr" });
    expect(run.metadata).toEqual({ created_by: "system", graph_id: "agent", source: "test", thread_id: "t1" });
    expect(run.kwargs.stream_mode).toEqual(["updates"]);
    expect(run.multitask_strategy).toBe("enqueue");
    expect(run.status).toBe("pending");
  });

  it("defaults to the values stream mode", () => {
    const run = buildRun({ assistant_id: "agent" }, assistant, thread, {
      runId: "r2",
      temporary: true,
      now: "2026-01-02T00:00:00.000Z",
      headers: {},
    });
    expect(run.kwargs).toMatchObject({ stream_mode: ["values"], subgraphs: false, resumable: false, temporary: true });
  });
});
