import { AIMessage } from "@langchain/core/messages";
import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import { Annotation, END, interrupt, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { EchoChatModel } from "../../../example/src/echo-model.ts";

/**
 * Graphs the run tests execute: slow multi-step work, human approval, failure, subgraphs, custom
 * events, a node that edits its input in place.
 */

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(new Error("aborted"));
      },
      { once: true },
    );
  });

const Steps = Annotation.Root({
  /** Steps left to take (the input sets it) and how long each lasts. */
  steps: Annotation<number>({ reducer: (_, b) => b, default: () => 1 }),
  delay_ms: Annotation<number>({ reducer: (_, b) => b, default: () => 0 }),
  /** A label per run so tests can see which runs ran, in which order. */
  label: Annotation<string>({ reducer: (_, b) => b, default: () => "" }),
  /** Appended once per step: `<label>:<steps taken on the thread>` and the process that executed it. */
  done: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
  pids: Annotation<number[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
  taken: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
});

/** One checkpoint per step, so a run taken over after a crash resumes where it was. */
export const steps = new StateGraph(Steps)
  .addNode("step", async (state, config: LangGraphRunnableConfig) => {
    await sleep(state.delay_ms, config.signal);
    return { done: [`${state.label}:${state.taken + 1}`], pids: [process.pid], taken: 1, steps: state.steps - 1 };
  })
  .addEdge(START, "step")
  .addConditionalEdges("step", (state) => (state.steps > 0 ? "step" : END))
  .compile();

const Approval = Annotation.Root({
  request: Annotation<string>(),
  answer: Annotation<string>(),
});

export const approval = new StateGraph(Approval)
  .addNode("ask", (state) => ({ answer: String(interrupt({ question: `approve ${state.request}?` })) }))
  .addNode("record", (state) => ({ answer: `${state.answer} (recorded)` }))
  .addEdge(START, "ask")
  .addEdge("ask", "record")
  .compile();

export const failing = new StateGraph(MessagesAnnotation)
  .addNode("explode", () => {
    throw new TypeError("the tool is broken");
  })
  .addEdge(START, "explode")
  .compile();

const model = new EchoChatModel({ prefix: "Child says: " });

const child = new StateGraph(MessagesAnnotation)
  .addNode("child_model", async (state) => ({ messages: [await model.invoke(state.messages)] }))
  .addEdge(START, "child_model")
  .compile();

export const nested = new StateGraph(MessagesAnnotation)
  .addNode("delegate", child)
  .addEdge(START, "delegate")
  .compile();

export const custom = new StateGraph(MessagesAnnotation)
  .addNode("report", (_state, config: LangGraphRunnableConfig) => {
    config.writer?.({ progress: 50 });
    config.writer?.({ progress: 100 });
    return { messages: [] };
  })
  .addEdge(START, "report")
  .compile();

const Question = Annotation.Root({ question: Annotation<string>() });
const Answer = Annotation.Root({ answer: Annotation<string>() });
const Worked = Annotation.Root({
  ...Question.spec,
  ...Answer.spec,
  /** Kept in the thread's state, never in the graph's output. */
  notes: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
});

/** Output narrower than its state (streamed runs still carry the whole state, as `getState` does). */
export const privateNotes = new StateGraph({ stateSchema: Worked, input: Question, output: Answer })
  .addNode("reply", (state) => ({ answer: `re: ${state.question}`, notes: [`read ${state.question}`] }))
  .addEdge(START, "reply")
  .compile();

const Chatty = Annotation.Root({ count: Annotation<number>(), size: Annotation<number>() });

/**
 * `count` custom events of about `size` characters each: a long run stream, made quickly (in
 * slices, so the worker keeps renewing its lease).
 */
export const chatty = new StateGraph(Chatty)
  .addNode("talk", async (state, config: LangGraphRunnableConfig) => {
    const text = "x".repeat(state.size);
    for (let i = 0; i < state.count; i++) {
      config.writer?.({ i, text });
      if (i % 500 === 499) await new Promise((resolve) => setImmediate(resolve));
    }
    return {};
  })
  .addEdge(START, "talk")
  .compile();

/**
 * Marks the conversation's first message in place (one `+` a run), as a node may edit its
 * input, and answers; the builder too, for a test to run the same graph on another checkpointer.
 */
export const editsInPlace = new StateGraph(MessagesAnnotation)
  .addNode("reply", (state) => {
    const first = state.messages[0];
    if (first) first.content = `${String(first.content)}+`;
    return { messages: [new AIMessage({ id: `answer-${state.messages.length}`, content: "noted" })] };
  })
  .addEdge(START, "reply");

export const editing = editsInPlace.compile();
