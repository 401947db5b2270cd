import { AsyncLocalStorage } from "node:async_hooks";
import type { Logger } from "@agentplane/common";
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";

/**
 * Where `getLogger()` of `@langchain/langgraph-sdk/logging` looks for the platform's logger. It
 * is a global symbol, so every copy of the SDK (the project's, loaded in its own tsx namespace,
 * included) finds the one registered here.
 */
const SDK_LOGGER = Symbol.for("langgraph.api.sdk-logger");

/** The graph whose module is being imported, for log lines written at import time. */
const loadingGraph = new AsyncLocalStorage<string>();

/** Runs `load` with `graphId` in the bindings of whatever the graph module logs while it loads. */
export const whileLoadingGraph = <T>(graphId: string, load: () => Promise<T>): Promise<T> =>
  loadingGraph.run(graphId, load);

type Level = "error" | "warn" | "info" | "debug" | "trace";

/**
 * The SDK's logger interface is winston's (the reference server logs with winston): its levels,
 * each called as `(message, ...meta)` or `(object)`. Levels winston has and pino lacks map to
 * the nearest pino level by severity.
 */
const LEVELS: Record<string, Level> = {
  error: "error",
  warn: "warn",
  help: "info",
  data: "info",
  info: "info",
  http: "debug",
  verbose: "debug",
  prompt: "debug",
  input: "debug",
  debug: "debug",
  silly: "trace",
};

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Error);

/**
 * Graph id (of the module loading, or of the run), node, run and thread of the code that logs:
 * at run time they come from the LangChain runnable config of the calling node.
 */
function bindings(): Record<string, unknown> {
  const loading = loadingGraph.getStore();
  if (loading !== undefined) return { graph_id: loading };
  const metadata = AsyncLocalStorageProviderSingleton.getRunnableConfig()?.metadata as
    | Record<string, unknown>
    | undefined;
  if (!metadata) return {};
  const picked: Record<string, unknown> = {};
  for (const key of ["graph_id", "langgraph_node", "run_id", "thread_id"]) {
    if (metadata[key] !== undefined) picked[key] = metadata[key];
  }
  return picked;
}

function write(logger: Logger, level: Level, message: unknown, meta: unknown[]): void {
  const fields: Record<string, unknown> = { ...bindings() };
  for (const item of meta) {
    if (isRecord(item)) Object.assign(fields, item);
    else if (item instanceof Error) fields.err = item;
  }
  if (typeof message === "string") logger[level](fields, message);
  else if (message instanceof Error) logger[level]({ ...fields, err: message }, message.message);
  else if (isRecord(message)) {
    const { message: text, ...rest } = message;
    logger[level]({ ...fields, ...rest }, typeof text === "string" ? text : "");
  } else logger[level](fields, String(message));
}

/** A winston-shaped facade over `logger`, as the SDK's `Logger` type describes it. */
export function sdkLogger(logger: Logger): Record<string, (message: unknown, ...meta: unknown[]) => unknown> {
  const facade: Record<string, (message: unknown, ...meta: unknown[]) => unknown> = {};
  for (const [name, level] of Object.entries(LEVELS)) {
    facade[name] = (message, ...meta) => {
      write(logger, level, message, meta);
      return facade;
    };
  }
  return facade;
}

/**
 * Makes `getLogger()` work in graph modules, at import time too, so it must run before they
 * load. The registration is process-wide, as in the reference server: with several servers in
 * one process the latest one's logger serves.
 */
export function registerSdkLogger(logger: Logger): void {
  (globalThis as Record<symbol, unknown>)[SDK_LOGGER] = sdkLogger(logger);
}
