import { dirname } from "node:path";
import type { Logger } from "@agentplane/common";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  attachPersistence,
  createModuleLoader,
  type GraphSource,
  loadGraphSource,
  type ModuleLoader,
  type Persistence,
} from "./load.ts";
import { applyProjectEnv, type GraphDefinition, readProject } from "./project.ts";
import { deriveGraphSchemas, deriveSubgraphSchemas, type SchemaSources } from "./schemas.ts";
import { StaticSchemaCache } from "./schemas-static.ts";
import { registerSdkLogger, whileLoadingGraph } from "./sdk-logger.ts";
import type { AnyCompiledGraph, GraphRegistry, GraphSchemas } from "./types.ts";

interface LoadedGraph {
  definition: GraphDefinition;
  source: GraphSource;
}

interface LoadedProject {
  graphs: Map<string, LoadedGraph>;
  loader: ModuleLoader;
  /** Per load: in dev, a reload may follow an edit of the types. */
  staticSchemas: StaticSchemaCache;
}

async function loadProject(configPath: string, logger: Logger): Promise<LoadedProject> {
  const project = readProject(configPath);
  applyProjectEnv(project.env);
  // Before any import: graph modules may call the SDK's `getLogger()` at top level.
  registerSdkLogger(logger);
  const loader = createModuleLoader();
  try {
    const graphs = new Map<string, LoadedGraph>();
    for (const definition of project.graphs) {
      const source = await whileLoadingGraph(definition.graphId, () => loadGraphSource(definition, loader));
      graphs.set(definition.graphId, { definition, source });
    }
    const sources = new Map(
      project.graphs.map((graph) => [graph.graphId, { sourceFile: graph.modulePath, exportSymbol: graph.exportName }]),
    );
    return { graphs, loader, staticSchemas: new StaticSchemaCache(sources, logger) };
  } catch (error) {
    await loader.close();
    throw error;
  }
}

/**
 * The graphs of one `langgraph.json`. `reload()` re-imports every module and swaps the set in
 * only when all of them load, so a broken edit in dev keeps the last working graphs serving.
 */
export class ProjectGraphRegistry implements GraphRegistry {
  private loaded: LoadedProject;
  private readonly configPath: string;
  private readonly persistence: Persistence;
  private readonly logger: Logger;

  private constructor(configPath: string, persistence: Persistence, logger: Logger, loaded: LoadedProject) {
    this.configPath = configPath;
    this.persistence = persistence;
    this.logger = logger;
    this.loaded = loaded;
  }

  /** `logger` backs the SDK's `getLogger()` for the graphs. */
  static async load(configPath: string, persistence: Persistence, logger: Logger): Promise<ProjectGraphRegistry> {
    return new ProjectGraphRegistry(configPath, persistence, logger, await loadProject(configPath, logger));
  }

  async reload(): Promise<void> {
    const previous = this.loaded;
    this.loaded = await loadProject(this.configPath, this.logger);
    await previous.loader.close();
  }

  private get graphs(): Map<string, LoadedGraph> {
    return this.loaded.graphs;
  }

  importShared(specifier: string): Promise<Record<string, unknown>> {
    return this.loaded.loader.importPackage(specifier, dirname(this.configPath));
  }

  ids(): string[] {
    return [...this.graphs.keys()];
  }

  has(graphId: string): boolean {
    return this.graphs.has(graphId);
  }

  description(graphId: string): string | undefined {
    return this.graphs.get(graphId)?.definition.description;
  }

  async get(graphId: string, config: RunnableConfig = {}): Promise<AnyCompiledGraph> {
    const loaded = this.graphs.get(graphId);
    if (!loaded) throw new Error(`Graph "${graphId}" not found`);
    const graph = loaded.source.kind === "compiled" ? loaded.source.graph : await loaded.source.build(config);
    return attachPersistence(graph, this.persistence);
  }

  /** Where schemas come from; without `waitForTypes`, only the TypeScript types already read. */
  private schemaSources(waitForTypes: boolean): SchemaSources {
    const { staticSchemas } = this.loaded;
    return {
      importPackage: (specifier) => this.importShared(specifier),
      staticSchemas: async (graphId) => (waitForTypes ? staticSchemas.get(graphId) : staticSchemas.settled(graphId)),
    };
  }

  async schemas(graphId: string, graph?: AnyCompiledGraph): Promise<GraphSchemas> {
    return deriveGraphSchemas(graphId, graph ?? (await this.get(graphId)), this.schemaSources(true));
  }

  async schemasWithoutWaiting(graphId: string): Promise<GraphSchemas> {
    return deriveGraphSchemas(graphId, await this.get(graphId), this.schemaSources(false));
  }

  subgraphSchemas(
    graphId: string,
    graph: AnyCompiledGraph,
    namespace: string | undefined,
    recurse: boolean,
  ): Promise<Record<string, GraphSchemas>> {
    return deriveSubgraphSchemas(graphId, graph, this.schemaSources(true), namespace, recurse);
  }
}
