import { AIMessageChunk, HumanMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import {
  apiCheckpointPayload,
  eventStreamMode,
  graphStreamModes,
  LegacyMessages,
  mapGraphChunk,
  needsStreamEvents,
} from "./modes.ts";

describe("stream modes", () => {
  it("asks LangGraph for values always and for the library modes behind the API modes", () => {
    expect(graphStreamModes(["updates"]).sort()).toEqual(["updates", "values"]);
    expect(graphStreamModes(["messages-tuple", "custom"]).sort()).toEqual(["custom", "messages", "values"]);
    expect(graphStreamModes(["events", "messages"])).toEqual(["values"]);
    expect(needsStreamEvents(["values", "messages"])).toBe(true);
    expect(needsStreamEvents(["values", "messages-tuple"])).toBe(false);
  });

  it("through streamEvents asks for the reference server's modes (they decide the event order)", () => {
    expect(graphStreamModes(["updates", "events"], true).sort()).toEqual(["debug", "updates"]);
    expect(graphStreamModes(["messages", "custom"], true).sort()).toEqual(["custom", "debug", "values"]);
    expect(graphStreamModes(["messages-tuple", "events"], true).sort()).toEqual(["debug", "messages"]);
  });

  it("streams checkpoint envelopes with subgraphs when values are asked for and checkpoints are not", () => {
    expect(needsStreamEvents(["values"], true)).toBe(true);
    expect(needsStreamEvents(["values"], false)).toBe(false);
    expect(needsStreamEvents(["values", "checkpoints"], true)).toBe(false);
    const envelope = { id: "c1", parent_id: "c0", step: 1, source: "loop" };
    expect(mapGraphChunk(["sub:1"], "checkpoints", envelope, new Set(["values"]), true)).toEqual([
      { event: "checkpoints|sub:1", data: envelope },
    ]);
    expect(mapGraphChunk([], "checkpoints", envelope, new Set(["updates"]), true)).toEqual([]);
  });

  it("maps SSE event names back to the API mode for join filters", () => {
    expect(eventStreamMode("messages/partial")).toBe("messages");
    expect(eventStreamMode("messages|agent:1")).toBe("messages-tuple");
    expect(eventStreamMode("updates|child:2|grandchild:3")).toBe("updates");
  });

  it("names subgraph chunks mode|namespace and drops them unless subgraphs were asked for", () => {
    const requested = new Set(["updates"] as const);
    expect(mapGraphChunk(["child:1"], "updates", { a: 1 }, requested, true)).toEqual([
      { event: "updates|child:1", data: { a: 1 } },
    ]);
    expect(mapGraphChunk(["child:1"], "updates", { a: 1 }, requested, false)).toEqual([]);
    expect(mapGraphChunk([], "values", { a: 1 }, requested, false)).toEqual([]);
  });

  it("sends message tuples with the chunk serialised", () => {
    const [event] = mapGraphChunk(
      [],
      "messages",
      [new AIMessageChunk({ content: "hi", id: "m1" }), { langgraph_node: "n" }],
      new Set(["messages-tuple"] as const),
      false,
    );
    expect(event?.event).toBe("messages");
    expect(event?.data).toEqual([expect.objectContaining({ content: "hi", id: "m1" }), { langgraph_node: "n" }]);
  });

  it("builds legacy partial messages from tokens and completes each message once", () => {
    const legacy = new LegacyMessages();
    const first = legacy.token(new AIMessageChunk({ content: "Hel", id: "m1" }), { step: 1 });
    expect(first.map((e) => e.event)).toEqual(["messages/metadata", "messages/partial"]);
    const second = legacy.token(new AIMessageChunk({ content: "lo", id: "m1" }), { step: 1 });
    expect(second).toEqual([{ event: "messages/partial", data: [expect.objectContaining({ content: "Hello" })] }]);
    const human = new HumanMessage({ content: "q", id: "h1" });
    expect(legacy.values({ messages: [human] }).map((e) => e.event)).toEqual(["messages/complete"]);
    expect(legacy.values({ messages: [human] })).toEqual([]);
  });

  it("exposes checkpoints with API checkpoint objects and without internal config keys", () => {
    const payload = apiCheckpointPayload({
      config: { configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c2", __pregel_x: 1 } },
      parentConfig: { configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c1" } },
      values: { a: 1 },
      tasks: [{ id: "k", name: "n", state: { configurable: { thread_id: "t", checkpoint_ns: "n:k" } } }],
    }) as Record<string, unknown>;
    expect(payload.checkpoint).toEqual({
      thread_id: "t",
      checkpoint_ns: "",
      checkpoint_id: "c2",
      checkpoint_map: null,
    });
    expect(payload.parent_checkpoint).toMatchObject({ checkpoint_id: "c1" });
    expect(payload.config).toEqual({ configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c2" } });
    expect(payload.tasks).toEqual([
      {
        id: "k",
        name: "n",
        checkpoint: { thread_id: "t", checkpoint_ns: "n:k", checkpoint_id: null, checkpoint_map: null },
      },
    ]);
  });
});
