import { Worker } from "node:worker_threads";
import type { JsonObject } from "../storage/types.ts";

/** A graph's schemas as LangGraph.js tooling names them (the reference server's `GraphSchema`). */
export interface RawGraphSchema {
  state?: JsonObject;
  input?: JsonObject;
  output?: JsonObject;
  config?: JsonObject;
}

/** Schemas read from the types, keyed by the export name and `export|node` for each subgraph. */
export type StaticGraphSchemas = Record<string, RawGraphSchema>;

export interface GraphSourceFile {
  sourceFile: string;
  exportSymbol: string;
}

interface WorkerAnswer {
  schemas?: StaticGraphSchemas;
  error?: string;
  diagnostics: string[];
}

// Same file name in src/ (run as TypeScript) and dist/ (compiled).
const workerUrl = new URL(`./schemas-static-worker${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url);

/**
 * How long reading one graph's types may take: `LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS`, the
 * reference server's setting, else its default of 30 s (type-checking a project takes seconds).
 */
export function schemaTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const configured = Number.parseInt(env.LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS ?? "", 10);
  return Number.isInteger(configured) && configured > 0 ? configured : 30_000;
}

/** Runs the TypeScript extraction of one graph module in a worker thread (it type-checks the project). */
function extractInWorker(source: GraphSourceFile, timeoutMs: number): Promise<WorkerAnswer> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerUrl, { workerData: source });
    const timer = setTimeout(() => {
      void worker.terminate();
      reject(new Error(`reading the types took longer than ${timeoutMs} ms`));
    }, timeoutMs);
    worker.once("message", (answer: WorkerAnswer) => {
      clearTimeout(timer);
      void worker.terminate();
      resolve(answer);
    });
    worker.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    worker.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the schema worker exited with code ${code}`));
    });
  });
}

export interface StaticSchemaLog {
  debug(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/**
 * JSON Schemas from the project's TypeScript types, for graphs whose state has no runtime schema
 * (`Annotation` states, configuration schemas). Extracted on first use per graph, never at start
 * (it takes seconds), and kept: the types do not change while the modules stay loaded. A graph
 * whose types cannot be read has no static schemas (`undefined`), and the failure is logged.
 */
export class StaticSchemaCache {
  readonly #sources: Map<string, GraphSourceFile>;
  readonly #log: StaticSchemaLog;
  readonly #timeoutMs: number;
  readonly #cache = new Map<string, Promise<StaticGraphSchemas | undefined>>();
  readonly #settled = new Map<string, StaticGraphSchemas | undefined>();

  constructor(sources: Map<string, GraphSourceFile>, log: StaticSchemaLog, timeoutMs = schemaTimeoutMs()) {
    this.#sources = sources;
    this.#log = log;
    this.#timeoutMs = timeoutMs;
  }

  get(graphId: string): Promise<StaticGraphSchemas | undefined> {
    let schemas = this.#cache.get(graphId);
    if (!schemas) {
      schemas = this.#extract(graphId);
      this.#cache.set(graphId, schemas);
      void schemas.then((read) => this.#settled.set(graphId, read));
    }
    return schemas;
  }

  /** The schemas already read, without starting or waiting on an extraction (`undefined` until then). */
  settled(graphId: string): StaticGraphSchemas | undefined {
    return this.#settled.get(graphId);
  }

  async #extract(graphId: string): Promise<StaticGraphSchemas | undefined> {
    const source = this.#sources.get(graphId);
    if (!source) return undefined;
    const started = performance.now();
    try {
      const answer = await extractInWorker(source, this.#timeoutMs);
      const details = { graph_id: graphId, ms: Math.round(performance.now() - started) };
      if (answer.diagnostics.length) this.#log.debug({ ...details, diagnostics: answer.diagnostics }, "type errors");
      if (answer.error) throw new Error(answer.error);
      this.#log.debug(details, "schemas read from the graph's types");
      return answer.schemas;
    } catch (error) {
      this.#log.warn(
        { graph_id: graphId, error: (error as Error).message },
        "cannot read the graph's schemas from its types",
      );
      return undefined;
    }
  }
}
