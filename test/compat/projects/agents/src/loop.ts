import { setTimeout as sleep } from "node:timers/promises";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

/**
 * Loops until `count` reaches `until`: a low `recursion_limit` must stop it with GraphRecursionError.
 * `tick_ms` makes each step take that long, for scenarios that need a run still running.
 */

const Loop = Annotation.Root({
  count: Annotation<number>({ reducer: (_, b) => b, default: () => 0 }),
  until: Annotation<number>({ reducer: (_, b) => b, default: () => 10 }),
  tick_ms: Annotation<number>({ reducer: (_, b) => b, default: () => 0 }),
});

export const graph = new StateGraph(Loop)
  .addNode("tick", async (state) => {
    if (state.tick_ms > 0) await sleep(state.tick_ms);
    return { count: state.count + 1 };
  })
  .addEdge(START, "tick")
  .addConditionalEdges("tick", (state) => (state.count < state.until ? "tick" : END))
  .compile();
