import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Client } from "../../../../node_modules/@langchain/langgraph/node_modules/@langchain/langgraph-sdk/dist/index.js";

/**
 * The newest 1.x SDK, the first with `client.threads.stream` (the protocol's client): the one
 * `@langchain/langgraph` depends on, installed beside it (the root `@langchain/langgraph-sdk` is
 * another line without it).
 */
export type LatestClient = typeof Client;

export async function latestSdk(): Promise<{ Client: LatestClient; version: string }> {
  const require = createRequire(import.meta.url);
  const langgraph = dirname(require.resolve("@langchain/langgraph/package.json"));
  const sdk = join(langgraph, "node_modules/@langchain/langgraph-sdk");
  const { version } = require(join(sdk, "package.json")) as { version: string };
  const module = (await import(pathToFileURL(join(sdk, "dist/index.js")).href)) as { Client: LatestClient };
  return { Client: module.Client, version };
}
