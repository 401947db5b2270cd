import { randomUUID } from "node:crypto";
import { Command, MemorySaver, StreamChannel } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import type { AnyCompiledGraph } from "../graphs/types.ts";
import { custom, failing, nested } from "../runs/testing/graphs.ts";
import type { GraphProtocolEvent } from "./events.ts";
import { streamGraphProtocolEvents } from "./graph-events.ts";

/**
 * `streamGraphProtocolEvents` against what it stands in for, `graph.streamEvents(…, {version:
 * "v3"})`: the same events in the same order for the same graph and inputs, each way on a thread
 * of its own. Timestamps and v3's sequence numbers are left out (the server numbers its own), and
 * ids (message, run, task, checkpoint, interrupt ids differ from run to run) are masked.
 */

/**
 * The chat and review graphs of the differential tests' project, loaded at run time as the server
 * loads a project's graphs (that project is not part of this package's type check).
 */
const agents = new URL("../../../test/compat/projects/agents/src/", import.meta.url).href;
const load = async (file: string) => ((await import(`${agents}${file}`)) as { graph: AnyCompiledGraph }).graph;
const [chat, review] = await Promise.all([load("chat.ts"), load("review.ts")]);

type Outcome = { events: unknown[]; error?: string };

const IDS = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{32}\b/g;

const comparable = (event: GraphProtocolEvent) => {
  const { timestamp: _timestamp, ...params } = event.params;
  return JSON.parse(JSON.stringify({ method: event.method, params }).replace(IDS, "<id>"));
};

async function viaStreamEvents(graph: AnyCompiledGraph, input: unknown, threadId: string): Promise<Outcome> {
  const events: unknown[] = [];
  try {
    const stream = await graph.streamEvents(
      input as never,
      {
        configurable: { thread_id: threadId },
        version: "v3",
      } as never,
    );
    for await (const event of stream as unknown as AsyncIterable<GraphProtocolEvent>) events.push(comparable(event));
    return { events };
  } catch (error) {
    return { events, error: String(error) };
  }
}

async function viaOurs(graph: AnyCompiledGraph, input: unknown, threadId: string): Promise<Outcome> {
  const events: unknown[] = [];
  try {
    await streamGraphProtocolEvents(graph, input, { configurable: { thread_id: threadId } }, (event) =>
      events.push(comparable(event)),
    );
    return { events };
  } catch (error) {
    return { events, error: String(error) };
  }
}

/** A copy of a shared test graph with a checkpointer of its own (the module's graph stays as it is). */
function withMemory(graph: unknown, config: Record<string, unknown> = {}): AnyCompiledGraph {
  const copy = (graph as AnyCompiledGraph).withConfig(config) as AnyCompiledGraph;
  copy.checkpointer = new MemorySaver();
  return copy;
}

/** Each input in turn on one thread per way (a resume goes where its interrupt is). */
async function bothWays(graph: AnyCompiledGraph, inputs: unknown[]) {
  const [theirs, ours] = [randomUUID(), randomUUID()];
  const outcomes: { expected: Outcome; actual: Outcome }[] = [];
  for (const input of inputs) {
    outcomes.push({ expected: await viaStreamEvents(graph, input, theirs), actual: await viaOurs(graph, input, ours) });
  }
  return outcomes;
}

const said = (content: string) => ({ messages: [{ role: "user", content }] });

describe("a protocol run's graph events", () => {
  it("are streamEvents v3's for a tool-calling chat: messages, tools, tasks, values, updates", async () => {
    const [run] = await bothWays(withMemory(chat), [said("weather?")]);
    expect(run?.actual).toEqual(run?.expected);
    const methods = new Set((run?.actual.events as { method: string }[]).map((event) => event.method));
    expect([...methods]).toEqual(expect.arrayContaining(["messages", "tasks", "tools", "updates", "values"]));
  });

  it("are v3's for an interrupt in a subgraph and its answer, subgraph lifecycle included", async () => {
    const runs = await bothWays(withMemory(review), [{ topic: "tests" }, new Command({ resume: "yes" })]);
    for (const run of runs) expect(run.actual).toEqual(run.expected);
    const subgraph = (runs[0]?.actual.events as GraphProtocolEvent[]).filter(
      (event) => event.method === "lifecycle" && event.params.namespace.length === 1,
    );
    expect(subgraph.map((event) => (event.params.data as { event: string }).event)[0]).toBe("started");
  });

  it("are v3's for a model in a subgraph and for custom writes", async () => {
    for (const graph of [nested, custom]) {
      const [run] = await bothWays(withMemory(graph), [said("hi")]);
      expect(run?.actual).toEqual(run?.expected);
    }
  });

  it("end failed, as v3's do, before the graph's error", async () => {
    const [run] = await bothWays(withMemory(failing), [said("go")]);
    expect(run?.actual).toEqual(run?.expected);
    expect(run?.actual.error).toContain("the tool is broken");
    expect(run?.actual.events.at(-1)).toMatchObject({ method: "lifecycle", params: { data: { event: "failed" } } });
  });

  it("include what a graph's own stream transformers add", async () => {
    const progress = () => {
      const channel = StreamChannel.remote("progress");
      return {
        init: () => ({ progress: channel }),
        process: (event: { method: string }) => {
          if (event.method === "custom") channel.push({ seen: true });
          return true;
        },
      };
    };
    const [run] = await bothWays(withMemory(custom, { streamTransformers: [progress] }), [said("hi")]);
    expect(run?.actual).toEqual(run?.expected);
    expect(run?.actual.events).toContainEqual(expect.objectContaining({ method: "custom:progress" }));
  });
});
