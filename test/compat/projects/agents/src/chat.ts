import { randomUUID } from "node:crypto";
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, AIMessageChunk, type BaseMessage, ToolMessage } from "@langchain/core/messages";
import { ChatGenerationChunk, type ChatResult } from "@langchain/core/outputs";
import { tool } from "@langchain/core/tools";
import { END, type LangGraphRunnableConfig, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { z } from "zod";

/** A tool-calling agent as the LangGraph.js quickstart writes it, with a scripted model instead of a provider. */

const getWeather = tool(async ({ city }) => `It is sunny in ${city}.`, {
  name: "get_weather",
  description: "The weather in a city.",
  schema: z.object({ city: z.string() }),
});

/**
 * Asks for the weather first, then answers with what the tool said. Like a provider's model it
 * gives the same message whether invoked or streamed (LangChain's FakeStreamingChatModel does
 * not: invoked, it echoes the first message), streaming the text in words.
 */
class ScriptedChatModel extends BaseChatModel {
  _llmType() {
    return "scripted";
  }

  // The script already knows its one tool.
  bindTools(_tools: unknown[]) {
    return this;
  }

  #reply(messages: BaseMessage[]) {
    const last = messages.at(-1);
    const id = `msg-${randomUUID()}`;
    if (last instanceof ToolMessage) return { id, content: `Forecast: ${last.content}`, tool_calls: [] };
    const call = { name: "get_weather", args: { city: "Paris" }, id: "call_weather_1", type: "tool_call" as const };
    return { id, content: "", tool_calls: [call] };
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const reply = this.#reply(messages);
    return { generations: [{ text: reply.content, message: new AIMessage(reply) }] };
  }

  async *_streamResponseChunks(
    messages: BaseMessage[],
    _options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    const { id, content, tool_calls } = this.#reply(messages);
    const words = content ? content.split(/(?<= )/) : [""];
    for (const [i, word] of words.entries()) {
      const last = i === words.length - 1;
      const message = new AIMessageChunk({
        id,
        content: word,
        tool_call_chunks: last
          ? tool_calls.map((call, index) => ({
              ...call,
              args: JSON.stringify(call.args),
              index,
              type: "tool_call_chunk",
            }))
          : [],
      });
      const chunk = new ChatGenerationChunk({ text: word, message });
      yield chunk;
      await runManager?.handleLLMNewToken(word, undefined, undefined, undefined, undefined, { chunk });
    }
  }
}

const model = new ScriptedChatModel({}).bindTools([getWeather]);

async function agent(state: typeof MessagesAnnotation.State, config: LangGraphRunnableConfig) {
  config.writer?.({ status: "thinking", turn: state.messages.length });
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
