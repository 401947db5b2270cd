import { AIMessage, ToolMessage } from "@langchain/core/messages";
import type { StateSnapshot } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { toJsonValue, toThreadState } from "./state.ts";

describe("toJsonValue", () => {
  it("turns messages into plain objects with their type-specific fields, recursively", () => {
    const ai = new AIMessage({
      content: "calling",
      id: "a1",
      tool_calls: [{ id: "c1", name: "search", args: { q: "x" } }],
      usage_metadata: { input_tokens: 1, output_tokens: 2, total_tokens: 3 },
    });
    const tool = new ToolMessage({ content: "found", tool_call_id: "c1", id: "t1" });
    const value = toJsonValue({ messages: [ai, tool], at: new Date("2026-01-02T03:04:05Z"), skip: undefined });
    expect(value).toEqual({
      messages: [
        {
          type: "ai",
          content: "calling",
          id: "a1",
          name: null,
          additional_kwargs: {},
          response_metadata: {},
          tool_calls: [expect.objectContaining({ id: "c1", name: "search", args: { q: "x" } })],
          invalid_tool_calls: [],
          usage_metadata: { input_tokens: 1, output_tokens: 2, total_tokens: 3 },
        },
        {
          type: "tool",
          content: "found",
          id: "t1",
          name: null,
          additional_kwargs: {},
          response_metadata: {},
          tool_call_id: "c1",
          status: null,
          artifact: null,
        },
      ],
      at: "2026-01-02T03:04:05.000Z",
    });
  });

  it("sends a v1 message's content blocks as the reference does, live or loaded, and none otherwise", async () => {
    const v1 = new AIMessage({
      content: "sunny",
      id: "a2",
      response_metadata: { output_version: "v1" },
      tool_calls: [{ id: "c2", name: "get_weather", args: { city: "Paris" }, type: "tool_call" }],
    });
    const blocks = [
      { type: "text", text: "sunny" },
      { type: "tool_call", id: "c2", name: "get_weather", args: { city: "Paris" } },
    ];
    // What the reference sends: the serialised fields (`toDict()`) and the type.
    const reference = { ...v1.toDict().data, type: "ai" } as Record<string, unknown>;
    expect(reference.content_blocks).toEqual(blocks);
    expect(toJsonValue(v1)).toMatchObject({ content_blocks: blocks });
    const loaded = new AIMessage((v1.toJSON() as unknown as { kwargs: never }).kwargs);
    expect(toJsonValue(loaded)).toMatchObject({ content_blocks: blocks });
    expect(toJsonValue(new AIMessage({ content: "plain", id: "a3" }))).not.toHaveProperty("content_blocks");
  });
});

describe("toThreadState", () => {
  it("maps checkpoints, task errors and interrupts, flattening interrupts to the top level", () => {
    const config = { configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c2" } };
    const snapshot: StateSnapshot = {
      values: { n: 1 },
      next: ["b", "c"],
      config,
      parentConfig: { configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c1" } },
      metadata: { source: "loop", step: 2, parents: {} },
      createdAt: "2026-01-01T00:00:00.000Z",
      tasks: [
        { id: "k1", name: "b", interrupts: [{ id: "i1", value: { ask: "?" } }], path: ["__pregel_pull", "b"] },
        { id: "k2", name: "c", interrupts: [], error: new Error("boom") },
      ],
    };
    const state = toThreadState(snapshot);
    expect(state).toMatchObject({
      values: { n: 1 },
      next: ["b", "c"],
      checkpoint: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c2", checkpoint_map: null },
      checkpoint_id: "c2",
      parent_checkpoint_id: "c1",
      metadata: { source: "loop", step: 2 },
      created_at: "2026-01-01T00:00:00.000Z",
      interrupts: [{ id: "i1", value: { ask: "?" } }],
    });
    expect(state.tasks).toEqual([
      {
        id: "k1",
        name: "b",
        path: ["__pregel_pull", "b"],
        error: null,
        interrupts: [{ id: "i1", value: { ask: "?" } }],
        checkpoint: null,
        state: null,
        result: null,
      },
      { id: "k2", name: "c", path: null, error: "boom", interrupts: [], checkpoint: null, state: null, result: null },
    ]);
  });
});
