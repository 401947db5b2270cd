import { dirname } from "node:path";
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
import { deriveGraphSchemas } from "./schemas.ts";
import type { AnyCompiledGraph, GraphRegistry, GraphSchemas } from "./types.ts";

interface LoadedGraph {
  definition: GraphDefinition;
  source: GraphSource;
}

interface LoadedProject {
  graphs: Map<string, LoadedGraph>;
  loader: ModuleLoader;
}

async function loadProject(configPath: string): Promise<LoadedProject> {
  const project = readProject(configPath);
  applyProjectEnv(project.env);
  const loader = createModuleLoader();
  try {
    const graphs = new Map<string, LoadedGraph>();
    for (const definition of project.graphs) {
      graphs.set(definition.graphId, { definition, source: await loadGraphSource(definition, loader) });
    }
    return { graphs, loader };
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

  private constructor(configPath: string, persistence: Persistence, loaded: LoadedProject) {
    this.configPath = configPath;
    this.persistence = persistence;
    this.loaded = loaded;
  }

  static async load(configPath: string, persistence: Persistence): Promise<ProjectGraphRegistry> {
    return new ProjectGraphRegistry(configPath, persistence, await loadProject(configPath));
  }

  async reload(): Promise<void> {
    const previous = this.loaded;
    this.loaded = await loadProject(this.configPath);
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

  async schemas(graphId: string): Promise<GraphSchemas> {
    return deriveGraphSchemas(graphId, await this.get(graphId));
  }
}
