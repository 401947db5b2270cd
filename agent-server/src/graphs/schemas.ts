import {
  getConfigTypeSchema,
  getInputTypeSchema,
  getOutputTypeSchema,
  getStateTypeSchema,
} from "@langchain/langgraph/zod/schema";
import type { JsonObject } from "../storage/types.ts";
import type { AnyCompiledGraph, GraphSchemas } from "./types.ts";

/** Channels the runtime adds to every graph; they are not part of the user's state. */
const isInternalChannel = (name: string) => name.startsWith("__") || name.startsWith("branch:");

/**
 * Without zod/StateSchema metadata (e.g. `Annotation` states) the best we know is the channel
 * list; a messages reducer still marks its channel as a messages list.
 */
function channelSchema(graph: AnyCompiledGraph): JsonObject {
  const properties: JsonObject = {};
  for (const [name, channel] of Object.entries(graph.channels ?? {})) {
    if (isInternalChannel(name)) continue;
    const operator = (channel as { operator?: { name?: string } }).operator;
    properties[name] = operator?.name === "messagesStateReducer" ? { langgraph_type: "messages" } : {};
  }
  return { type: "object", title: "State", properties };
}

function safely(derive: () => unknown): JsonObject | null {
  try {
    const schema = derive();
    return schema && typeof schema === "object" ? (schema as JsonObject) : null;
  } catch {
    return null;
  }
}

/** JSON Schemas of a graph's state, input, output and runtime context. */
export function deriveGraphSchemas(graphId: string, graph: AnyCompiledGraph): GraphSchemas {
  const state = safely(() => getStateTypeSchema(graph)) ?? channelSchema(graph);
  const context = safely(() => getConfigTypeSchema(graph));
  return {
    graph_id: graphId,
    input_schema: safely(() => getInputTypeSchema(graph)) ?? state,
    output_schema: safely(() => getOutputTypeSchema(graph)) ?? state,
    state_schema: state,
    // LangGraph.js has one runtime configuration schema; it serves as both config and context.
    config_schema: context,
    context_schema: context,
  };
}

/** Schemas of every subgraph under `namespace` (all of them when omitted), keyed by `|`-joined namespace. */
export async function deriveSubgraphSchemas(
  graphId: string,
  graph: AnyCompiledGraph,
  namespace: string | undefined,
  recurse: boolean,
): Promise<Record<string, GraphSchemas>> {
  const result: Record<string, GraphSchemas> = {};
  for await (const [path, subgraph] of graph.getSubgraphsAsync(namespace, recurse)) {
    result[path] = deriveGraphSchemas(graphId, subgraph as AnyCompiledGraph);
  }
  return result;
}
