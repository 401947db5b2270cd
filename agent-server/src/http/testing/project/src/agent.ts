import { Annotation, START, StateGraph } from "@langchain/langgraph";
import { getLogger } from "@langchain/langgraph-sdk/logging";

// At import time, as LangGraph.js projects do: the server must have registered its logger already.
const logger = getLogger();
logger.info("agent module loaded", { fixture: "http-project" });

const State = Annotation.Root({
  name: Annotation<string>,
  reply: Annotation<string>,
});

/** Greets with the greeting and model of its assistant's config and context. */
export const graph = new StateGraph(State)
  .addNode("greet", (state, config) => {
    getLogger().info("greeting", { name: state.name });
    const greeting = config.configurable?.greeting ?? "Hi";
    const model = (config as { context?: { model?: string } }).context?.model ?? "none";
    return { reply: `${greeting} ${state.name ?? "nobody"} (${model})` };
  })
  .addEdge(START, "greet")
  .compile();
