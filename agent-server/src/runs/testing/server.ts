import { randomUUID } from "node:crypto";
import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { Client } from "@langchain/langgraph-sdk";
import { startTestServer } from "../../graphs/testing/server.ts";
import { type AgentServer, defaultModules } from "../../server.ts";
import { type RunsModule, runsModule } from "../module.ts";
import type { RunSettings } from "../settings.ts";

export const runFixtureConfig = new URL("./langgraph.json", import.meta.url).pathname;
/** The same graphs with a short default thread TTL (1.2 s) swept every 0.3 s. */
export const ttlFixtureConfig = new URL("./ttl-langgraph.json", import.meta.url).pathname;

/** Short timings so takeovers and heartbeats happen within a test's patience. */
export const fastRunSettings: RunSettings = {
  leaseMs: 1500,
  maxAttempts: 3,
  pollMs: 200,
  heartbeatMs: 1000,
  stallMs: 60_000,
  maxLoggedEvents: 100_000,
};

export interface RunTestServer {
  server: AgentServer;
  runs: RunsModule;
  client: Client;
  url: string;
  close(): Promise<void>;
}

/**
 * An in-process agent server serving the run fixture graphs: on Redis under a private prefix,
 * or on in-memory storage (`agent-server dev`) without `redisUrl`.
 */
export async function startRunServer(
  redisUrl: string | undefined,
  options: {
    prefix?: string;
    workers?: number;
    settings?: Partial<RunSettings>;
    callbacks?: BaseCallbackHandler[];
    configPath?: string;
    env?: NodeJS.ProcessEnv;
  } = {},
): Promise<RunTestServer> {
  const runs = runsModule({ settings: { ...fastRunSettings, ...options.settings }, callbacks: options.callbacks });
  // No cron scheduler: run tests create no crons.
  const modules = defaultModules({ runs }).filter((module) => module.name !== "crons");
  const server = await startTestServer(options.configPath ?? runFixtureConfig, {
    redisUrl,
    prefix: options.prefix ?? `runs-${randomUUID().slice(0, 8)}:`,
    env: { N_WORKERS: String(options.workers ?? 4), SHUTDOWN_GRACE_MS: "2000", ...options.env },
    modules,
  });
  return {
    server,
    runs,
    url: server.url,
    client: new Client({ apiUrl: server.url }),
    close: () => server.close(),
  };
}
