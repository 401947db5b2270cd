import { Annotation, StateGraph } from "@langchain/langgraph";

export const graph = new StateGraph(Annotation.Root({ n: Annotation<number> }))
  .addNode("noop", () => ({}))
  .addEdge("__start__", "noop")
  .compile();
