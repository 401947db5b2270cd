import {
  convertToProtocolEvent,
  createLifecycleTransformer,
  type ProtocolEvent,
  STREAM_EVENTS_V3_MODES,
} from "@langchain/langgraph";
import type { AnyCompiledGraph } from "../graphs/types.ts";
import type { GraphProtocolEvent } from "./events.ts";

/**
 * A protocol run's graph events: what `graph.streamEvents(input, {version: "v3"})` yields, event
 * for event, without the machinery around it that the server does not use.
 *
 * `streamEvents` v3 runs `graph.stream` with the protocol's stream modes and feeds each chunk,
 * converted by `convertToProtocolEvent`, through a multiplexer: an in-memory log of every event,
 * a handle per subgraph, the run's values, a `ChatModelStream` per AI message, and an async
 * iterator step per event. Of its transformers only the lifecycle one adds events (a subgraph's
 * `started`/`completed`/`failed`, the root's status); the others only feed projections of the
 * run handle. Here the same chunks go through the same converter and the same lifecycle
 * transformer, in the multiplexer's order, straight to `onEvent`: 8 % less CPU for a chat run's
 * graph (docs/performance.md "Thread-centric protocol"). A graph compiled with stream
 * transformers of its own (they add `custom:` events) goes through `streamEvents` itself.
 */
export async function streamGraphProtocolEvents(
  graph: AnyCompiledGraph,
  input: unknown,
  options: Record<string, unknown> & { configurable?: Record<string, unknown> },
  onEvent: (event: GraphProtocolEvent) => void,
): Promise<void> {
  const pregel = graph as AnyCompiledGraph & { streamTransformers?: unknown[] };
  if (pregel.streamTransformers?.length) {
    const events = await graph.streamEvents(input as never, { ...options, version: "v3" } as never);
    for await (const event of events as unknown as AsyncIterable<GraphProtocolEvent>) onEvent(event);
    return;
  }
  const lifecycle = createLifecycleTransformer();
  // The multiplexer's `push`: the lifecycle transformer sees each event first, and the events it
  // emits meanwhile (a namespace starting, the one before completing) come out ahead of it.
  const push = (_namespace: string[], event: ProtocolEvent) => {
    if (lifecycle.process(event)) onEvent(event as GraphProtocolEvent);
  };
  lifecycle.onRegister?.({ push });
  // The options `streamEvents` v3 passes to `graph.stream`; `version` selects the protocol's
  // messages handler (content-block events) instead of the `[message, metadata]` tuples.
  const streamOptions = {
    recursionLimit: graph.config?.recursionLimit,
    ...options,
    configurable: { ...graph.config?.configurable, ...options.configurable },
    version: "v3",
    streamMode: STREAM_EVENTS_V3_MODES,
    subgraphs: true,
  };
  let seq = 0;
  try {
    const chunks = await graph.stream(input as never, streamOptions as never);
    for await (const [namespace, mode, payload] of chunks as AsyncIterable<[string[], string, unknown]>) {
      const events = convertToProtocolEvent({ namespace, mode, payload, seq } as never);
      seq += events.length;
      for (const event of events) push(namespace, event);
    }
  } catch (error) {
    // Subgraphs still running and the root end `failed`, before the error, as v3 sends them.
    lifecycle.fail?.(error);
    throw error;
  }
  await lifecycle.finalize?.();
}
