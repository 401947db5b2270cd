import type { BaseMessage } from "@langchain/core/messages";
import { END, MessagesZodMeta, START, StateGraph } from "@langchain/langgraph";
import { withLangGraph } from "@langchain/langgraph/zod";
import { z } from "zod/v3";

/**
 * A zod state as the LangGraph.js guides write it (zod 3): the messages channel carries LangGraph's
 * metadata through `withLangGraph`, the graph has a context schema and a subgraph.
 */

const Research = z.object({
  messages: withLangGraph(z.custom<BaseMessage[]>(), MessagesZodMeta),
  query: z.string().describe("What to look up"),
  sources: z.array(z.string()).default([]),
});

const research = new StateGraph(Research)
  .addNode("search", (state) => ({ sources: [`result for ${state.query}`] }))
  .addEdge(START, "search")
  .addEdge("search", END)
  .compile();

const Context = z.object({
  model: z.enum(["small", "large"]).describe("Which model answers"),
  user_id: z.string().optional(),
});

const Chat = Research.extend({ answer: z.string().optional() });

export const graph = new StateGraph(Chat, Context)
  .addNode("research", research)
  .addNode("respond", (state) => ({ answer: `${state.sources.length} sources` }))
  .addEdge(START, "research")
  .addEdge("research", "respond")
  .addEdge("respond", END)
  .compile();
