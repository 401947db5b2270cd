import type { JsonObject } from "../storage/types.ts";
import type { RawGraphSchema, StaticGraphSchemas } from "./schemas-static.ts";
import type { AnyCompiledGraph, GraphSchemas } from "./types.ts";

/**
 * A package as the project's graphs import it. The metadata `withLangGraph` and LangGraph's zod
 * registry record lives in the project's copy of `@langchain/langgraph`; another copy sees none.
 */
export type ImportProjectPackage = (specifier: string) => Promise<Record<string, unknown>>;

type ToSchema = (graph: unknown) => JsonObject | undefined;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;

/** `StateSchema` (LangGraph.js 1.x) describes itself. */
interface StateSchemaLike {
  getJsonSchema(): JsonObject;
  getInputJsonSchema(): JsonObject;
}
const isStateSchema = (value: unknown): value is StateSchemaLike =>
  isObject(value) && typeof value.getJsonSchema === "function" && typeof value.getInputJsonSchema === "function";

// LangGraph's marker for an input schema that is the state schema made partial.
const PARTIAL_STATE_SCHEMA = Symbol.for("langgraph.state.partial");

interface Builder {
  _schemaRuntimeDefinition?: unknown;
  _inputRuntimeDefinition?: unknown;
  _outputRuntimeDefinition?: unknown;
  _configRuntimeSchema?: unknown;
}

function fromStateSchema(builder: Builder): RawGraphSchema | undefined {
  const { _schemaRuntimeDefinition: state, _inputRuntimeDefinition: input, _outputRuntimeDefinition: output } = builder;
  if (!isStateSchema(state) && !isStateSchema(input) && !isStateSchema(output)) return undefined;
  const inputSchema = isStateSchema(input)
    ? input.getInputJsonSchema()
    : input === PARTIAL_STATE_SCHEMA && isStateSchema(state)
      ? state.getInputJsonSchema()
      : undefined;
  return {
    state: isStateSchema(state) ? state.getJsonSchema() : undefined,
    input: inputSchema,
    output: isStateSchema(output) ? output.getJsonSchema() : undefined,
  };
}

const someDefined = (schema: RawGraphSchema) => Object.values(schema).some((value) => value != null);

async function attempt<T>(derive: () => Promise<T> | T): Promise<T | undefined> {
  try {
    return await derive();
  } catch {
    return undefined;
  }
}

/** Zod states through LangGraph's registry, which carries `withLangGraph`'s metadata (`langgraph_type`). */
async function fromZodRegistry(
  graph: AnyCompiledGraph,
  load: ImportProjectPackage,
): Promise<RawGraphSchema | undefined> {
  const zod = (await load("@langchain/langgraph/zod/schema")) as Record<string, ToSchema>;
  const schema = {
    state: zod.getUpdateTypeSchema?.(graph),
    input: zod.getInputTypeSchema?.(graph),
    output: zod.getOutputTypeSchema?.(graph),
    config: zod.getConfigTypeSchema?.(graph),
  };
  return someDefined(schema) ? schema : undefined;
}

/** Zod schemas the registry does not know, converted directly (no LangGraph metadata). */
async function fromZod(builder: Builder, load: ImportProjectPackage): Promise<RawGraphSchema | undefined> {
  const { toJsonSchema } = (await load("@langchain/core/utils/json_schema")) as { toJsonSchema: ToSchema };
  const types = (await load("@langchain/core/utils/types")) as Record<string, (value: unknown) => boolean>;
  const convert = (schema: unknown) => {
    if (!schema || !(types.isZodSchemaV4?.(schema) || types.isZodSchemaV3?.(schema))) return undefined;
    try {
      return toJsonSchema(schema);
    } catch {
      return undefined;
    }
  };
  const state = convert(builder._schemaRuntimeDefinition);
  const schema = {
    state,
    input: convert(builder._inputRuntimeDefinition) ?? (state ? { ...state, required: undefined } : undefined),
    output: convert(builder._outputRuntimeDefinition),
    config: convert(builder._configRuntimeSchema),
  };
  return someDefined(schema) ? (JSON.parse(JSON.stringify(schema)) as RawGraphSchema) : undefined;
}

/**
 * The schemas a graph describes at run time, in the reference server's order of preference:
 * `StateSchema`, zod through LangGraph's registry, plain zod. `undefined` for `Annotation`
 * states, whose schemas only the TypeScript types hold.
 */
export async function runtimeSchema(
  graph: AnyCompiledGraph,
  load: ImportProjectPackage,
): Promise<RawGraphSchema | undefined> {
  const builder = (graph as { builder?: Builder }).builder;
  if (!builder) return undefined;
  return (
    fromStateSchema(builder) ??
    (await attempt(() => fromZodRegistry(graph, load))) ??
    (await attempt(() => fromZod(builder, load)))
  );
}

/** Channels the runtime adds to every graph; they are not part of the user's state. */
const isInternalChannel = (name: string) => name.startsWith("__") || name.startsWith("branch:");

/**
 * The last resort, when neither the graph nor its types can be read: the channel list; a
 * messages reducer still marks its channel as a messages list.
 */
function channelSchema(graph: AnyCompiledGraph): RawGraphSchema {
  const properties: JsonObject = {};
  for (const [name, channel] of Object.entries(graph.channels ?? {})) {
    if (isInternalChannel(name)) continue;
    const operator = (channel as { operator?: { name?: string } }).operator;
    properties[name] = operator?.name === "messagesStateReducer" ? { langgraph_type: "messages" } : {};
  }
  const state = { type: "object", title: "State", properties };
  return { state, input: state, output: state };
}

/** The root graph's entry of the static schemas (the one key without a `|`), or a subgraph's. */
function staticEntry(schemas: StaticGraphSchemas | undefined, namespace?: string): RawGraphSchema | undefined {
  if (!schemas) return undefined;
  const root = Object.keys(schemas).find((key) => !key.includes("|"));
  if (root === undefined) return undefined;
  return (namespace !== undefined ? schemas[`${root}|${namespace}`] : undefined) ?? schemas[root];
}

/** Where schemas come from: the project's packages, and its types read on demand. */
export interface SchemaSources {
  importPackage: ImportProjectPackage;
  staticSchemas(graphId: string): Promise<StaticGraphSchemas | undefined>;
}

function toGraphSchemas(graphId: string, schema: RawGraphSchema): GraphSchemas {
  return {
    graph_id: graphId,
    input_schema: schema.input ?? null,
    output_schema: schema.output ?? null,
    state_schema: schema.state ?? null,
    config_schema: schema.config ?? null,
    // LangGraph.js has one runtime configuration schema; it serves as both config and context.
    context_schema: schema.config ?? null,
  };
}

/**
 * JSON Schemas of a graph (or of its subgraph at `namespace`): from the graph itself when its
 * state is zod or `StateSchema`, else from its TypeScript types, as the reference server does.
 */
export async function deriveGraphSchemas(
  graphId: string,
  graph: AnyCompiledGraph,
  sources: SchemaSources,
  namespace?: string,
): Promise<GraphSchemas> {
  const schema =
    (await runtimeSchema(graph, sources.importPackage)) ??
    staticEntry(await sources.staticSchemas(graphId), namespace) ??
    channelSchema(graph);
  return toGraphSchemas(graphId, schema);
}

/** Schemas of every subgraph under `namespace` (all of them when omitted), keyed by `|`-joined namespace. */
export async function deriveSubgraphSchemas(
  graphId: string,
  graph: AnyCompiledGraph,
  sources: SchemaSources,
  namespace: string | undefined,
  recurse: boolean,
): Promise<Record<string, GraphSchemas>> {
  const result: Record<string, GraphSchemas> = {};
  for await (const [path, subgraph] of graph.getSubgraphsAsync(namespace, recurse)) {
    result[path] = await deriveGraphSchemas(graphId, subgraph as AnyCompiledGraph, sources, path);
  }
  return result;
}
