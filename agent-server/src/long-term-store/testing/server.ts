import { Client } from "@langchain/langgraph-sdk";
import { startTestServer } from "../../graphs/testing/server.ts";
import type { AgentServer, StartOptions } from "../../server.ts";

/** The project the store, cron, A2A, MCP and HTTP-extension tests serve (its `http` section included). */
export const extensionsFixtureConfig = new URL("./project/langgraph.json", import.meta.url).pathname;
/**
 * The example graph with a `store` section: a 1.2 s default TTL that reads do not refresh, and
 * an index over `text` with the keyword embeddings in this folder.
 */
export const storeConfigFixture = new URL("./store-config.json", import.meta.url).pathname;

export interface ExtensionTestServer {
  server: AgentServer;
  client: Client;
  url: string;
  close(): Promise<void>;
}

/** An in-process agent server with every default module: on Redis under `prefix`, or in memory. */
export async function startExtensionServer(
  redisUrl: string | undefined,
  options: StartOptions & { prefix?: string; env?: NodeJS.ProcessEnv; configPath?: string } = {},
): Promise<ExtensionTestServer> {
  const { configPath = extensionsFixtureConfig, ...rest } = options;
  const server = await startTestServer(configPath, { redisUrl, ...rest });
  return { server, url: server.url, client: new Client({ apiUrl: server.url }), close: () => server.close() };
}
