import { Annotation, Command, END, interrupt, Send, START, StateGraph } from "@langchain/langgraph";
import {
  type BaseCheckpointSaver,
  type CheckpointMetadata,
  type CheckpointTuple,
  uuid6,
} from "@langchain/langgraph-checkpoint";
import { v4 as uuidv4 } from "uuid";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { ThreadCheckpointer } from "../../storage/types.ts";

const State = Annotation.Root({
  items: Annotation<string[]>({ reducer: (left, right) => left.concat(right), default: () => [] }),
  answer: Annotation<string>,
});
const InnerState = Annotation.Root({ answer: Annotation<string> });

/** START → "step" (appends "step") → END: each run writes 3 checkpoints (input, start, step). */
function appendGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(State)
    .addNode("step", () => ({ items: ["step"] }))
    .addEdge(START, "step")
    .addEdge("step", END)
    .compile({ checkpointer });
}

/** A parent whose subgraph node interrupts, asking for the value to append. */
function interruptingGraph(checkpointer: BaseCheckpointSaver) {
  const inner = new StateGraph(InnerState)
    .addNode("ask", () => ({ answer: interrupt("what?") as string }))
    .addEdge(START, "ask")
    .addEdge("ask", END)
    .compile();
  return new StateGraph(State)
    .addNode("before", () => ({ items: ["before"] }))
    .addNode("inner", inner)
    .addEdge(START, "before")
    .addEdge("before", "inner")
    .addEdge("inner", END)
    .compile({ checkpointer });
}

const threadConfig = (threadId: string) => ({ configurable: { thread_id: threadId } });

/** A run's graph config as the server builds it: the run id in the metadata tags what the run stores. */
const runConfig = (threadId: string, runId: string) => ({
  configurable: { thread_id: threadId },
  metadata: { run_id: runId },
});

async function all(checkpointer: BaseCheckpointSaver, threadId: string): Promise<CheckpointTuple[]> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of checkpointer.list({ configurable: { thread_id: threadId } })) tuples.push(tuple);
  return tuples;
}

const threadIdIn = (tuple: CheckpointTuple) => (tuple.metadata as Record<string, unknown> | undefined)?.thread_id;

const namespaces = (tuples: CheckpointTuple[]) =>
  new Set(tuples.map((tuple) => tuple.config.configurable?.checkpoint_ns as string));

/**
 * Whole-thread operations every ThreadCheckpointer must get right, driven through real
 * LangGraph graphs. `make` returns a fresh, empty checkpointer; `cleanup` releases it.
 */
export function threadCheckpointerContract(
  make: () => Promise<ThreadCheckpointer>,
  cleanup: (checkpointer: ThreadCheckpointer) => Promise<void> = async () => {},
): void {
  let checkpointer: ThreadCheckpointer;
  let source: string;
  let target: string;
  beforeEach(async () => {
    checkpointer = await make();
    source = uuidv4();
    target = uuidv4();
  });
  afterEach(() => cleanup(checkpointer));

  it("copies every checkpoint with its state and rewrites thread_id in metadata", async () => {
    const graph = appendGraph(checkpointer);
    await graph.invoke({ items: ["a"] }, threadConfig(source));
    await graph.invoke({ items: ["b"] }, threadConfig(source));
    // A checkpoint stored without config metadata (not by graph execution) also keeps its thread_id.
    const latest = await graph.getState(threadConfig(source));
    const tagged = await checkpointer.getTuple(latest.config);
    if (!tagged) throw new Error("no latest checkpoint");
    await checkpointer.put(
      latest.config,
      { ...tagged.checkpoint, id: uuid6(1) },
      { ...tagged.metadata, thread_id: source } as CheckpointMetadata,
      {},
    );

    await checkpointer.copyThread(source, target);

    expect((await graph.getState(threadConfig(target))).values).toEqual({ items: ["a", "step", "b", "step"] });
    const sourceHistory = await all(checkpointer, source);
    const targetHistory = await all(checkpointer, target);
    expect(targetHistory.map((tuple) => tuple.checkpoint)).toEqual(sourceHistory.map((tuple) => tuple.checkpoint));
    expect(targetHistory.map((tuple) => tuple.parentConfig?.configurable?.checkpoint_id)).toEqual(
      sourceHistory.map((tuple) => tuple.parentConfig?.configurable?.checkpoint_id),
    );
    expect(targetHistory.map((tuple) => threadIdIn(tuple))).toEqual(Array(7).fill(target));
    expect(sourceHistory.map((tuple) => threadIdIn(tuple))).toEqual(Array(7).fill(source));
  });

  it("makes copies independent: later runs on either thread never show up on the other", async () => {
    const graph = appendGraph(checkpointer);
    await graph.invoke({ items: ["a"] }, threadConfig(source));
    await checkpointer.copyThread(source, target);

    await graph.invoke({ items: ["to-target"] }, threadConfig(target));
    await graph.invoke({ items: ["to-source"] }, threadConfig(source));

    expect((await graph.getState(threadConfig(source))).values.items).toEqual(["a", "step", "to-source", "step"]);
    expect((await graph.getState(threadConfig(target))).values.items).toEqual(["a", "step", "to-target", "step"]);
    expect(await all(checkpointer, source)).toHaveLength(6);
    expect(await all(checkpointer, target)).toHaveLength(6);
  });

  it("copies pending writes and subgraph namespaces, so an interrupted copy resumes on its own", async () => {
    const graph = interruptingGraph(checkpointer);
    await graph.invoke({ items: [] }, threadConfig(source));
    await checkpointer.copyThread(source, target);
    expect(namespaces(await all(checkpointer, target))).toEqual(namespaces(await all(checkpointer, source)));
    expect((await graph.getState(threadConfig(target))).tasks[0]?.interrupts[0]?.value).toBe("what?");

    const resumed = await graph.invoke(new Command({ resume: "answer" }), threadConfig(target));

    expect(resumed).toEqual({ items: ["before"], answer: "answer" });
    const sourceState = await graph.getState(threadConfig(source));
    expect(sourceState.next).toEqual(["inner"]);
    expect(sourceState.values.items).toEqual(["before"]);
  });

  it("replaces whatever the target thread held before the copy", async () => {
    const graph = appendGraph(checkpointer);
    await graph.invoke({ items: ["old"] }, threadConfig(target));
    await graph.invoke({ items: ["old-again"] }, threadConfig(target));
    await graph.invoke({ items: ["new"] }, threadConfig(source));

    await checkpointer.copyThread(source, target);

    expect((await graph.getState(threadConfig(target))).values.items).toEqual(["new", "step"]);
    expect(await all(checkpointer, target)).toHaveLength(3);
  });

  it("copying a thread onto itself changes nothing", async () => {
    const graph = appendGraph(checkpointer);
    await graph.invoke({ items: ["a"] }, threadConfig(source));
    await checkpointer.copyThread(source, source);
    expect((await graph.getState(threadConfig(source))).values.items).toEqual(["a", "step"]);
    expect(await all(checkpointer, source)).toHaveLength(3);
  });

  it("copying an unknown thread leaves an empty target", async () => {
    await checkpointer.copyThread(source, target);
    expect(await all(checkpointer, target)).toEqual([]);
  });

  it("prunes to the latest root checkpoint and keeps the state working", async () => {
    const graph = appendGraph(checkpointer);
    await graph.invoke({ items: ["a"] }, threadConfig(source));
    await graph.invoke({ items: ["b"] }, threadConfig(source));
    const before = await graph.getState(threadConfig(source));

    await checkpointer.pruneThread(source);

    const history = await all(checkpointer, source);
    expect(history).toHaveLength(1);
    expect(history[0]?.config.configurable?.checkpoint_id).toBe(before.config.configurable?.checkpoint_id);
    expect((await graph.getState(threadConfig(source))).values).toEqual(before.values);
    await graph.invoke({ items: ["c"] }, threadConfig(source));
    expect((await graph.getState(threadConfig(source))).values.items).toEqual(["a", "step", "b", "step", "c", "step"]);
  });

  it("prunes an interrupted thread but keeps what resuming the subgraph needs", async () => {
    const graph = interruptingGraph(checkpointer);
    await graph.invoke({ items: [] }, threadConfig(source));
    // An older, finished subgraph namespace from the same thread must go.
    await checkpointer.put(
      { configurable: { thread_id: source, checkpoint_ns: "inner:stale-task" } },
      {
        v: 4,
        id: "00000000-0000-6000-8000-000000000000",
        ts: new Date(0).toISOString(),
        channel_values: {},
        channel_versions: {},
        versions_seen: {},
      },
      { source: "loop", step: 0, parents: {} },
      {},
    );

    await checkpointer.pruneThread(source);

    const kept = await all(checkpointer, source);
    expect(kept.filter((tuple) => tuple.config.configurable?.checkpoint_ns === "")).toHaveLength(1);
    expect([...namespaces(kept)].some((ns) => ns.startsWith("inner:") && ns !== "inner:stale-task")).toBe(true);
    expect(namespaces(kept).has("inner:stale-task")).toBe(false);
    const resumed = await graph.invoke(new Command({ resume: "answer" }), threadConfig(source));
    expect(resumed).toEqual({ items: ["before"], answer: "answer" });
  });

  it("pruning an unknown thread is a no-op", async () => {
    await expect(checkpointer.pruneThread(source)).resolves.toBeUndefined();
    expect(await all(checkpointer, source)).toEqual([]);
  });

  it("deletes every namespace of one thread and nothing of another", async () => {
    const graph = interruptingGraph(checkpointer);
    await graph.invoke({ items: [] }, threadConfig(source));
    await graph.invoke({ items: [] }, threadConfig(target));
    expect(namespaces(await all(checkpointer, source)).size).toBeGreaterThan(1);

    await checkpointer.deleteThread(source);

    expect(await all(checkpointer, source)).toEqual([]);
    expect(await checkpointer.getTuple({ configurable: { thread_id: source, checkpoint_ns: "" } })).toBeUndefined();
    expect((await graph.getState(threadConfig(target))).values.items).toEqual(["before"]);
    const resumed = await graph.invoke(new Command({ resume: "still-here" }), threadConfig(target));
    expect(resumed).toEqual({ items: ["before"], answer: "still-here" });
  });

  it("forks from an older checkpoint without disturbing the newer branch", async () => {
    const graph = appendGraph(checkpointer);
    await graph.invoke({ items: ["a"] }, threadConfig(source));
    await graph.invoke({ items: ["b"] }, threadConfig(source));
    const newer = await graph.getState(threadConfig(source));
    const beforeStep = newer.parentConfig;
    if (!beforeStep) throw new Error("the last checkpoint has a parent");

    // Same channel, same step as the newer branch wrote: versions must not collide.
    const fork = await graph.updateState(beforeStep, { items: ["fork"] }, "step");

    expect((await graph.getState(fork)).values.items).toEqual(["a", "step", "b", "fork"]);
    expect((await graph.getState(newer.config)).values.items).toEqual(["a", "step", "b", "step"]);
  });

  it("filters list by metadata containment", async () => {
    const graph = appendGraph(checkpointer);
    await graph.invoke({ items: ["a"] }, threadConfig(source));
    const inputs = [];
    for await (const tuple of checkpointer.list(
      { configurable: { thread_id: source } },
      { filter: { source: "input", step: -1 } },
    ))
      inputs.push(tuple);
    expect(inputs).toHaveLength(1);
    const nested = [];
    for await (const tuple of checkpointer.list({ configurable: { thread_id: source } }, { filter: { parents: {} } }))
      nested.push(tuple);
    expect(nested).toHaveLength(3);
  });

  it("records the run's context and each node's writes in checkpoint metadata, never secrets", async () => {
    const graph = appendGraph(checkpointer);
    await graph.invoke(
      { items: ["a"] },
      {
        configurable: { thread_id: source, user_id: "user-1", "x-api-key": "secret-key", authorization: "Bearer x" },
        metadata: { run_id: "run-1", graph_id: "append", labels: { team: "blue" } },
      },
    );
    const history = (await all(checkpointer, source)).reverse();
    expect(history.map((tuple) => tuple.metadata?.source)).toEqual(["input", "loop", "loop"]);
    for (const { metadata } of history) {
      expect(metadata).toMatchObject({
        thread_id: source,
        run_id: "run-1",
        graph_id: "append",
        user_id: "user-1",
        labels: { team: "blue" },
        parents: {},
      });
      const keys = Object.keys(metadata ?? {});
      expect(keys.filter((key) => key.startsWith("__") || key.startsWith("ls_"))).toEqual([]);
      expect(JSON.stringify(metadata)).not.toMatch(/secret-key|Bearer/);
    }
    expect(history.map((tuple) => (tuple.metadata as Record<string, unknown>).writes)).toEqual([
      { __start__: { items: ["a"] } },
      null,
      { step: { items: ["step"] } },
    ]);
    const fanOut = new StateGraph(State)
      .addNode("a", () => ({ items: ["a"] }))
      .addNode("b", (input: { item: string }) => ({ items: [input.item] }))
      .addConditionalEdges(START, () => [new Send("b", { item: "sent-1" }), new Send("b", { item: "sent-2" }), "a"])
      .addEdge("a", END)
      .compile({ checkpointer });
    await fanOut.invoke({ items: [] }, runConfig(target, "run-2"));
    const [latest] = await all(checkpointer, target);
    expect((latest?.metadata as Record<string, unknown>).writes).toEqual({
      a: { items: ["a"] },
      b: [{ items: ["sent-1"] }, { items: ["sent-2"] }],
    });
    const byRun = [];
    for await (const tuple of checkpointer.list(threadConfig(source), { filter: { run_id: "run-1", step: 1 } }))
      byRun.push(tuple);
    expect(byRun).toHaveLength(1);
  });

  it("deleteRun removes one run's checkpoints, leaving the thread as it was before that run", async () => {
    const graph = appendGraph(checkpointer);
    await graph.invoke({ items: ["a"] }, runConfig(source, "run-1"));
    await graph.invoke({ items: ["b"] }, runConfig(source, "run-2"));
    await graph.invoke({ items: ["a"] }, runConfig(target, "run-2"));

    await checkpointer.deleteRun(source, "run-2");

    const history = await all(checkpointer, source);
    expect(history.map((tuple) => (tuple.metadata as Record<string, unknown>).run_id)).toEqual(Array(3).fill("run-1"));
    expect((await graph.getState(threadConfig(source))).values.items).toEqual(["a", "step"]);
    expect(await all(checkpointer, target)).toHaveLength(3);
    await graph.invoke({ items: ["c"] }, runConfig(source, "run-3"));
    expect((await graph.getState(threadConfig(source))).values.items).toEqual(["a", "step", "c", "step"]);
  });

  it("deleteRun of a resuming run also drops the resume value it left on the interrupted checkpoint", async () => {
    const graph = interruptingGraph(checkpointer);
    await graph.invoke({ items: [] }, runConfig(source, "run-1"));
    await graph.invoke(new Command({ resume: "first answer" }), runConfig(source, "run-2"));

    await checkpointer.deleteRun(source, "run-2");

    const state = await graph.getState(threadConfig(source));
    expect(state.next).toEqual(["inner"]);
    expect(state.tasks[0]?.interrupts[0]?.value).toBe("what?");
    const resumed = await graph.invoke(new Command({ resume: "second answer" }), runConfig(source, "run-3"));
    expect(resumed).toEqual({ items: ["before"], answer: "second answer" });
  });

  it("deleteRun of a run that stored nothing, or of an unknown thread, changes nothing", async () => {
    const graph = appendGraph(checkpointer);
    await graph.invoke({ items: ["a"] }, runConfig(source, "run-1"));
    await checkpointer.deleteRun(source, "never-ran");
    await checkpointer.deleteRun(target, "run-1");
    expect(await all(checkpointer, source)).toHaveLength(3);
    expect(await all(checkpointer, target)).toEqual([]);
  });
}
