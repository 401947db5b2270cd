import { AIMessage, AIMessageChunk, type BaseMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { FakeStreamingChatModel } from "@langchain/core/utils/testing";
import { END, type LangGraphRunnableConfig, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { z } from "zod";

/** A tool-calling agent as the LangGraph.js quickstart writes it, with a scripted model instead of a provider. */

const getWeather = tool(async ({ city }) => `It is sunny in ${city}.`, {
  name: "get_weather",
  description: "The weather in a city.",
  schema: z.object({ city: z.string() }),
});

/** Asks for the weather first, then answers with what the tool said: the same turns on every run. */
function scriptedModel(messages: BaseMessage[]) {
  const last = messages.at(-1);
  if (last instanceof ToolMessage) {
    return new FakeStreamingChatModel({ sleep: 0, responses: [new AIMessage(`Forecast: ${last.content}`)] });
  }
  const call = { name: "get_weather", args: { city: "Paris" }, id: "call_weather_1", type: "tool_call" as const };
  return new FakeStreamingChatModel({ sleep: 0, chunks: [new AIMessageChunk({ content: "", tool_calls: [call] })] });
}

async function agent(state: typeof MessagesAnnotation.State, config: LangGraphRunnableConfig) {
  config.writer?.({ status: "thinking", turn: state.messages.length });
  const model = scriptedModel(state.messages).bindTools([getWeather]);
  return { messages: [await model.invoke(state.messages, config)] };
}

const route = (state: typeof MessagesAnnotation.State) =>
  (state.messages.at(-1) as AIMessage).tool_calls?.length ? "tools" : END;

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("agent", agent)
  .addNode("tools", new ToolNode([getWeather]))
  .addEdge(START, "agent")
  .addConditionalEdges("agent", route, ["tools", END])
  .addEdge("tools", "agent")
  .compile();
