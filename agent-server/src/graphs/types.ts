import type { RunnableConfig } from "@langchain/core/runnables";
import type { CompiledGraph } from "@langchain/langgraph";
import type { JsonObject } from "../storage/types.ts";

/** JSON Schemas of a graph (draft-07 style), as `GET /assistants/{id}/schemas` returns them. */
export interface GraphSchemas {
  graph_id: string;
  input_schema: JsonObject | null;
  output_schema: JsonObject | null;
  state_schema: JsonObject | null;
  config_schema: JsonObject | null;
  context_schema: JsonObject | null;
}

export type AnyCompiledGraph = CompiledGraph<any, any, any, any, any, any, any, any, any, any>;

/** The graphs named in `langgraph.json`, loaded once and wired to the server's persistence. */
export interface GraphRegistry {
  ids(): string[];
  has(graphId: string): boolean;
  description(graphId: string): string | undefined;
  /**
   * The compiled graph with the server's checkpointer and store attached. Factories
   * (`(config) => graph`) are called with `config` each time.
   */
  get(graphId: string, config?: RunnableConfig): Promise<AnyCompiledGraph>;
  /**
   * JSON Schemas of a graph, or of `graph` when given (an assistant's build of a factory): from
   * the graph when it describes itself (zod, `StateSchema`), else from its TypeScript types.
   */
  schemas(graphId: string, graph?: AnyCompiledGraph): Promise<GraphSchemas>;
  /**
   * The schemas `schemas()` gives once the TypeScript types are read; until then (reading them
   * takes seconds of CPU) the graph's runtime description, down to its channel list. Never starts
   * or waits on reading the types: for listings that answer at once, like MCP's tools.
   */
  schemasWithoutWaiting(graphId: string): Promise<GraphSchemas>;
  /** Schemas of the subgraphs of `graph` (a build of `graphId`) under `namespace`. */
  subgraphSchemas(
    graphId: string,
    graph: AnyCompiledGraph,
    namespace: string | undefined,
    recurse: boolean,
  ): Promise<Record<string, GraphSchemas>>;
  /**
   * A package as the graphs import it. Graph modules get their own module instances (see
   * `load.ts`), so process-wide state of a package they use, like LangSmith's trace queue, is
   * only reachable through this.
   */
  importShared(specifier: string): Promise<Record<string, unknown>>;
}
