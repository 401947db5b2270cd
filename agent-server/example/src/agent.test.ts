import { HumanMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { graph } from "./agent.ts";
import { EchoChatModel } from "./echo-model.ts";

describe("EchoChatModel", () => {
  it("answers with the prefix and the last human message, streamed in word chunks", async () => {
    const model = new EchoChatModel({ prefix: "You said: " });
    const reply = await model.invoke([new HumanMessage("first"), new HumanMessage("hello there world")]);
    expect(reply.content).toBe("You said: hello there world");
    const chunks: string[] = [];
    for await (const chunk of await model.stream([new HumanMessage("hello there world")])) {
      chunks.push(chunk.content as string);
    }
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.join("")).toBe("You said: hello there world");
  });
});

describe("example agent graph", () => {
  it("answers through call_model and streams the model's tokens", async () => {
    graph.checkpointer = new MemorySaver();
    const config = { configurable: { thread_id: "example" } };
    const tokens: string[] = [];
    for await (const [chunk, metadata] of await graph.stream(
      { messages: [new HumanMessage("ping pong")] },
      { ...config, streamMode: "messages" },
    )) {
      expect(metadata.langgraph_node).toBe("call_model");
      tokens.push(chunk.content as string);
    }
    expect(tokens.join("")).toMatch(/ping pong$/);
    const state = await graph.getState(config);
    expect(state.values.messages.map((m: { getType(): string }) => m.getType())).toEqual(["human", "ai"]);
  });
});
