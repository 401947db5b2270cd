import { Annotation, type LangGraphRunnableConfig, START, StateGraph } from "@langchain/langgraph";

/** A graph factory: the server calls it with the run's config, and the graph reads `configurable.step`. */

const Counter = Annotation.Root({
  count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  log: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
});

export function makeGraph(config: LangGraphRunnableConfig) {
  const step = Number(config.configurable?.step ?? 1);
  return new StateGraph(Counter)
    .addNode("increment", (state) => ({ count: step, log: [`${state.count}+${step}`] }))
    .addNode("double", (state) => ({ count: state.count, log: [`x2 at ${state.count}`] }))
    .addEdge(START, "increment")
    .addEdge("increment", "double")
    .compile();
}
