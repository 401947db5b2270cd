import { createRequire } from "node:module";
import { dirname } from "node:path";
import { pathToFileURL } from "node:url";
import { parentPort, workerData } from "node:worker_threads";

/**
 * Worker thread: JSON Schemas of graphs read from their TypeScript types, by the reference
 * server's own extractor (`@langchain/langgraph-api/schema`: the TypeScript compiler API and its
 * copy of typescript-json-schema), so they come out as the reference's do. It type-checks the
 * project for seconds, hence the thread. `workerData` is `{ sourceFile, exportSymbol }`; the
 * answer is `{ schemas, diagnostics }`, schemas keyed by `export` and `export|node` for
 * subgraphs, or `{ error, diagnostics }`.
 */

// The extractor prints the project's type errors with console.log; the server's stdout is its
// JSON log, so they are collected (bounded) and handed to the caller to log instead.
const MAX_DIAGNOSTICS = 20;
const diagnostics: string[] = [];
console.log = console.warn = (...args: unknown[]) => {
  if (diagnostics.length < MAX_DIAGNOSTICS) diagnostics.push(args.map(String).join(" ").slice(0, 2000));
};

const require = createRequire(import.meta.url);
const extractorEntry = require.resolve("@langchain/langgraph-api/schema");
const fromExtractor = createRequire(extractorEntry);

// @typescript/vfs finds TypeScript's lib files through its own `require.resolve("typescript")`,
// which may reach another TypeScript than the extractor's (a TypeScript 7, which has neither a
// JS API nor lib files, when the two are installed apart); point it at the extractor's.
const typescriptLib = dirname(fromExtractor.resolve("typescript"));
const vfs = fromExtractor("@typescript/vfs") as { createFSBackedSystem: (...args: unknown[]) => unknown };
const createFSBackedSystem = vfs.createFSBackedSystem;
vfs.createFSBackedSystem = (files, root, ts, libDirectory) =>
  createFSBackedSystem(files, root, ts, libDirectory ?? typescriptLib);

type Extract = (spec: unknown, options: { mainThread: boolean }) => Promise<unknown>;
const { getStaticGraphSchema } = (await import(pathToFileURL(extractorEntry).href)) as {
  getStaticGraphSchema: Extract;
};

try {
  // This worker is the extractor's thread, so it runs on it ("main thread" to the extractor).
  const schemas = await getStaticGraphSchema(workerData, { mainThread: true });
  parentPort?.postMessage({ schemas, diagnostics });
} catch (error) {
  parentPort?.postMessage({ error: (error as Error).message, diagnostics });
}
