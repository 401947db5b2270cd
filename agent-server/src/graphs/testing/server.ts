import { createLogger } from "@agentplane/common";
import { loadConfig } from "../../config.ts";
import { type AgentServer, type StartOptions, startAgentServer } from "../../server.ts";

export const exampleConfig = new URL("../../../example/langgraph.json", import.meta.url).pathname;
export const fixtureConfig = new URL("./project/langgraph.json", import.meta.url).pathname;

/**
 * Starts a real agent server on a free port: Redis storage under a private prefix when
 * `redisUrl` is given, in-memory storage otherwise.
 */
export function startTestServer(
  configPath: string,
  {
    redisUrl,
    prefix,
    env = {},
    ...options
  }: StartOptions & { redisUrl?: string; prefix?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<AgentServer> {
  const mode = redisUrl ? "serve" : "dev";
  const config = loadConfig([mode, "--config", configPath, "--port", "0", "--host", "127.0.0.1"], {
    ...env,
    ...(redisUrl ? { REDIS_URI: redisUrl, REDIS_PREFIX: prefix ?? "test:" } : {}),
  });
  return startAgentServer(config, { logger: createLogger("agent-server-test", "silent"), ...options });
}
