import { Annotation, getStore, interrupt, type LangGraphRunnableConfig, START, StateGraph } from "@langchain/langgraph";

/** Graphs the store, cron, A2A and MCP tests run. */

const Memory = Annotation.Root({
  user: Annotation<string>(),
  /** Stored as a new memory when given. */
  note: Annotation<string | undefined>(),
  /** Every memory of the user, oldest first, as the graph reads them back. */
  recalled: Annotation<string[]>({ reducer: (_, b) => b, default: () => [] }),
});

/** Writes through `config.store`, reads through `getStore()`: both are the server's store. */
export const memory = new StateGraph(Memory)
  .addNode("remember", async (state, config: LangGraphRunnableConfig) => {
    if (state.note) await config.store?.put(["memories", state.user], `note-${Date.now()}`, { text: state.note });
    const items = (await getStore()?.search(["memories", state.user], { limit: 100 })) ?? [];
    return { recalled: items.map((item) => String(item.value.text)).reverse() };
  })
  .addEdge(START, "remember")
  .compile();

const Sum = Annotation.Root({
  a: Annotation<number>(),
  b: Annotation<number>(),
  sum: Annotation<number>(),
});

/** A tool-like graph with a typed input schema (for MCP). */
export const adder = new StateGraph({ input: Annotation.Root({ a: Sum.spec.a, b: Sum.spec.b }), stateSchema: Sum })
  .addNode("add", (state) => ({ sum: state.a + state.b }))
  .addEdge(START, "add")
  .compile();

const Question = Annotation.Root({ request: Annotation<string>(), answer: Annotation<string>() });

/** Stops for a human answer (A2A `input-required`). */
export const approval = new StateGraph(Question)
  .addNode("ask", (state) => ({ answer: String(interrupt({ question: `approve ${state.request}?` })) }))
  .addEdge(START, "ask")
  .compile();

const Sleep = Annotation.Root({ delay_ms: Annotation<number>(), slept: Annotation<boolean>() });

/** Takes `delay_ms` and stops early when the run is cancelled (A2A tasks/cancel). */
export const sleeper = new StateGraph(Sleep)
  .addNode("sleep", async (state, config: LangGraphRunnableConfig) => {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, state.delay_ms);
      config.signal?.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(new Error("aborted"));
      });
    });
    return { slept: true };
  })
  .addEdge(START, "sleep")
  .compile();
