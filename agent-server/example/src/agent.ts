import { MessagesValue, START, StateGraph, StateSchema } from "@langchain/langgraph";
import { EchoChatModel } from "./echo-model.ts";

const State = new StateSchema({ messages: MessagesValue });

const model = new EchoChatModel({ prefix: process.env.ECHO_MODEL_PREFIX ?? "" });

/** One-node chat agent: `call_model` answers the conversation so far. */
export const graph = new StateGraph(State)
  .addNode("call_model", async (state) => ({ messages: [await model.invoke(state.messages)] }))
  .addEdge(START, "call_model")
  .compile();
