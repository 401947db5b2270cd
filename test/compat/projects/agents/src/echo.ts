import { Annotation, type LangGraphRunnableConfig, START, StateGraph } from "@langchain/langgraph";

/** Reports the run config its node sees: what a client's `config` turned into inside the graph. */

const Seen = Annotation.Root({
  seen: Annotation<Record<string, unknown>>(),
});

export const graph = new StateGraph(Seen)
  .addNode("look", (_state, config: LangGraphRunnableConfig) => ({
    seen: {
      tags: config.tags ?? [],
      recursion_limit: config.recursionLimit ?? null,
      max_concurrency: config.maxConcurrency ?? null,
      topic: config.configurable?.topic ?? null,
    },
  }))
  .addEdge(START, "look")
  .compile();
