import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { BaseCheckpointSaver, BaseStore } from "@langchain/langgraph-checkpoint";
import { register } from "tsx/esm/api";
import type { GraphDefinition } from "./project.ts";
import type { AnyCompiledGraph } from "./types.ts";

/** What an export of a graph module resolves to once promises are awaited. */
export type GraphSource =
  | { kind: "compiled"; graph: AnyCompiledGraph }
  | { kind: "factory"; build: (config: RunnableConfig) => Promise<AnyCompiledGraph> };

export interface Persistence {
  checkpointer: BaseCheckpointSaver;
  store: BaseStore;
}

export class GraphLoadError extends Error {}

// Graph modules may come from another copy of @langchain/langgraph, so shapes are checked instead of classes.
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;

function isCompiledGraph(value: unknown): value is AnyCompiledGraph {
  return (
    isObject(value) &&
    typeof value.invoke === "function" &&
    typeof value.getState === "function" &&
    isObject(value.nodes)
  );
}

function isUncompiledGraph(value: unknown): value is { compile(): unknown } {
  return isObject(value) && typeof value.compile === "function" && !isCompiledGraph(value);
}

/** Compiles builders and checks the result really is a graph. */
function asCompiledGraph(value: unknown, graphId: string): AnyCompiledGraph {
  const graph = isUncompiledGraph(value) ? value.compile() : value;
  if (!isCompiledGraph(graph)) {
    throw new GraphLoadError(`graph "${graphId}" is not a LangGraph graph (expected a StateGraph or compiled graph)`);
  }
  return graph;
}

/** The server owns persistence: whatever checkpointer or store the user compiled in is replaced. */
export function attachPersistence(graph: AnyCompiledGraph, persistence: Persistence): AnyCompiledGraph {
  graph.checkpointer = persistence.checkpointer;
  graph.store = persistence.store;
  return graph;
}

/**
 * Imports graph modules, TypeScript through tsx. Each loader is its own tsx namespace, so a
 * new loader sees the current code of every file (dev reload), while the graphs of one load
 * share module instances.
 */
export interface ModuleLoader {
  import(modulePath: string): Promise<Record<string, unknown>>;
  /** A package as a module in `fromDir` imports it: the same instance the graphs use. */
  importPackage(specifier: string, fromDir: string): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export function createModuleLoader(): ModuleLoader {
  const namespace = register({ namespace: randomUUID() });
  return {
    import: (modulePath) => namespace.import(pathToFileURL(modulePath).href, import.meta.url),
    importPackage: (specifier, fromDir) => namespace.import(specifier, pathToFileURL(`${fromDir}/`).href),
    close: () => namespace.unregister(),
  };
}

/**
 * An export that `langgraph.json` names outside `graphs` (`http.app`, `store.index.embed`),
 * imported through a loader of its own, returned so the caller can close it when done.
 */
export async function importProjectExport(
  what: string,
  modulePath: string,
  exportName: string,
): Promise<{ exported: unknown; loader: ModuleLoader }> {
  const loader = createModuleLoader();
  try {
    return { exported: (await loader.import(modulePath))[exportName], loader };
  } catch (error) {
    await loader.close();
    throw new GraphLoadError(`cannot load ${what} from ${modulePath}: ${(error as Error).message}`);
  }
}

/** Imports a graph's module and resolves its export to a compiled graph or a factory. */
export async function loadGraphSource(definition: GraphDefinition, loader: ModuleLoader): Promise<GraphSource> {
  let module: Record<string, unknown>;
  try {
    module = await loader.import(definition.modulePath);
  } catch (error) {
    throw new GraphLoadError(
      `cannot load graph "${definition.graphId}" from ${definition.modulePath}: ${(error as Error).message}`,
    );
  }
  if (!(definition.exportName in module)) {
    throw new GraphLoadError(
      `graph "${definition.graphId}": ${definition.modulePath} has no export "${definition.exportName}"`,
    );
  }
  const exported = await module[definition.exportName];
  if (typeof exported === "function" && !isCompiledGraph(exported)) {
    const factory = exported as (config: RunnableConfig) => unknown;
    return {
      kind: "factory",
      build: async (config) => asCompiledGraph(await factory(config), definition.graphId),
    };
  }
  return { kind: "compiled", graph: asCompiledGraph(exported, definition.graphId) };
}
