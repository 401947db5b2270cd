import { MemorySaver } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { graph as example } from "../../../../agent-server/example/src/agent.ts";
import { earlierMessages } from "../../growth-phases.ts";
import { graph as appending } from "./agent.ts";

/** The conversation's messages as JSON, with the ids the reducers draw at random made alike. */
async function conversationOf(graph: typeof example): Promise<string> {
  graph.checkpointer = new MemorySaver();
  const config = { configurable: { thread_id: "growth" } };
  // Seeded as the growth bench seeds its threads, then run as it runs them.
  await graph.updateState(config, { messages: earlierMessages(10) }, "call_model");
  for (let i = 0; i < 3; i++) {
    await graph.invoke({ messages: [{ role: "user", content: `how fast is it now? (${i})` }] }, config);
  }
  const messages = (await graph.getState(config)).values.messages as { id?: string }[];
  expect(messages.every((message) => typeof message.id === "string" && message.id.length > 0)).toBe(true);
  return JSON.stringify(messages).replace(/"id":"[0-9a-f-]{36}"/g, '"id":"<random>"');
}

describe("the growth bench's appending-reducer graph", () => {
  it("leaves a conversation that only grows as the example graph does: same messages, same bytes", async () => {
    const expected = await conversationOf(example);
    // The last question, and the model's echo of it.
    expect(expected.match(/how fast is it now\? \(2\)/g)).toHaveLength(2);
    expect(await conversationOf(appending as unknown as typeof example)).toBe(expected);
  });
});
