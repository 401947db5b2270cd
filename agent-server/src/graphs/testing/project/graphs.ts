import { Annotation, interrupt, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { z } from "zod";
import type { AnyCompiledGraph } from "../../types.ts";

/** Fixtures for graph loading: one export per shape a `langgraph.json` entry may point at. */

const Counter = Annotation.Root({ count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }) });

const counterBuilder = () =>
  new StateGraph(Counter).addNode("increment", () => ({ count: 1 })).addEdge(START, "increment");

export const compiled = counterBuilder().compile({ checkpointer: new MemorySaver() });
export const uncompiled = counterBuilder();
export const promised = Promise.resolve(counterBuilder().compile());
/** Built per request: the increment comes from the request's config. */
export const factory = (config: { configurable?: { step?: number } }) =>
  new StateGraph(Counter)
    .addNode("increment", () => ({ count: config.configurable?.step ?? 1 }))
    .addEdge(START, "increment");
export const messages = new StateGraph(MessagesAnnotation)
  .addNode("reply", () => ({ messages: [] }))
  .addEdge(START, "reply")
  .compile();

const child = new StateGraph(z.object({ topic: z.string() }))
  .addNode("research", () => ({ topic: "researched" }))
  .addNode("write", () => ({ topic: "written" }))
  .addEdge(START, "research")
  .addEdge("research", "write")
  .compile();
// Typed as AnyCompiledGraph because the inferred zod-derived type cannot be named in declarations.
export const parent = new StateGraph(z.object({ topic: z.string() }), { context: z.object({ model: z.string() }) })
  .addNode("child", child)
  .addEdge(START, "child")
  .compile() as AnyCompiledGraph;

/** Pauses inside its subgraph, so state shows a subgraph task with an interrupt. */
const asking = new StateGraph(z.object({ topic: z.string() }))
  .addNode("ask", () => ({ topic: interrupt<string, string>("which topic?") }))
  .addEdge(START, "ask")
  .compile();
export const hitl = new StateGraph(z.object({ topic: z.string() }))
  .addNode("asking", asking)
  .addEdge(START, "asking")
  .compile() as AnyCompiledGraph;

export const notAGraph = { hello: "world" };
export default counterBuilder().compile();
