// Preloaded (NODE_OPTIONS=--require) into the reference server and its threads. Its schema
// extractor gives @typescript/vfs the TypeScript installed beside the extractor (5.x), but vfs
// looks for TypeScript's lib files with its own require.resolve("typescript"), which in this
// repository finds the root's TypeScript 7 (no lib files): every schema read from types then
// fails. Point vfs at the extractor's TypeScript, as in a project that has only one.
const { createRequire } = require("node:module");
const { dirname } = require("node:path");

const fromCli = createRequire(require.resolve("@langchain/langgraph-cli/package.json"));
const fromExtractor = createRequire(fromCli.resolve("@langchain/langgraph-api/schema"));
const typescriptLib = dirname(fromExtractor.resolve("typescript"));
const vfs = fromExtractor("@typescript/vfs");
const createFSBackedSystem = vfs.createFSBackedSystem;
vfs.createFSBackedSystem = (files, root, ts, libDirectory) =>
  createFSBackedSystem(files, root, ts, libDirectory ?? typescriptLib);
