import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

/** Loops until `count` reaches `until`: a low `recursion_limit` must stop it with GraphRecursionError. */

const Loop = Annotation.Root({
  count: Annotation<number>({ reducer: (_, b) => b, default: () => 0 }),
  until: Annotation<number>({ reducer: (_, b) => b, default: () => 10 }),
});

export const graph = new StateGraph(Loop)
  .addNode("tick", (state) => ({ count: state.count + 1 }))
  .addEdge(START, "tick")
  .addConditionalEdges("tick", (state) => (state.count < state.until ? "tick" : END))
  .compile();
