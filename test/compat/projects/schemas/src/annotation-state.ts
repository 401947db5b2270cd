import type { BaseMessage } from "@langchain/core/messages";
import { Annotation, END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";

/** Annotation states as the LangGraph.js guides write them: messages, typed fields, a configuration schema, a subgraph. */

const PlanState = Annotation.Root({
  ...MessagesAnnotation.spec,
  steps: Annotation<string[]>({ reducer: (left, right) => left.concat(right), default: () => [] }),
});

const planner = new StateGraph(PlanState)
  .addNode("plan", () => ({ steps: ["look", "answer"] }))
  .addEdge(START, "plan")
  .addEdge("plan", END)
  .compile();

const AgentState = Annotation.Root({
  ...PlanState.spec,
  /** The final answer. */
  answer: Annotation<string>,
  attempts: Annotation<number>,
  last: Annotation<BaseMessage | undefined>,
});

const Configuration = Annotation.Root({
  model: Annotation<"small" | "large">,
  temperature: Annotation<number | undefined>,
});

export const graph = new StateGraph(AgentState, Configuration)
  .addNode("planner", planner)
  .addNode("respond", (state) => ({ answer: state.steps.join(", "), attempts: 1 }))
  .addEdge(START, "planner")
  .addEdge("planner", "respond")
  .addEdge("respond", END)
  .compile();
