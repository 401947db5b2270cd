import { type ChildProcess, spawn } from "node:child_process";
import { Client } from "@langchain/langgraph-sdk";
import { runFixtureConfig } from "./server.ts";

const cli = new URL("../../cli/main.ts", import.meta.url).pathname;

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  client: Client;
  pid: number;
  logs(): string;
  /** SIGTERM and wait for the exit (graceful shutdown). */
  stop(): Promise<void>;
  /** SIGKILL: the process dies mid-run, leases and all. */
  kill(): Promise<void>;
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((resolve) => child.once("exit", () => resolve()));

/**
 * `agent-server serve` in its own process on a free port, on the given Redis prefix; `entry` is
 * the CLI or a harness that takes the same arguments.
 */
export async function spawnServer(
  redisUrl: string,
  prefix: string,
  env: Record<string, string> = {},
  configPath = runFixtureConfig,
  entry = cli,
): Promise<ServerProcess> {
  const child = spawn(
    process.execPath,
    ["--conditions=source", entry, "serve", "--config", configPath, "--port", "0", "--host", "127.0.0.1"],
    {
      env: {
        ...process.env,
        REDIS_URI: redisUrl,
        REDIS_PREFIX: prefix,
        LOG_LEVEL: "warn",
        N_WORKERS: "2",
        RUN_LEASE_MS: "1500",
        RUN_POLL_MS: "200",
        STREAM_HEARTBEAT_MS: "1000",
        SHUTDOWN_GRACE_MS: "2000",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  // Loading the server from source takes a core for 1–2 s; with every core busy (test files at
  // once, each starting processes) it has taken over 10 s, so the deadline is generous.
  const deadline = Date.now() + 60_000;
  while (!/Agent server: (\S+)/.test(stdout)) {
    if (child.exitCode !== null) throw new Error(`server exited: ${stderr}`);
    if (Date.now() > deadline) throw new Error(`server did not start: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const url = /Agent server: (\S+)/.exec(stdout)?.[1] as string;
  return {
    child,
    url,
    pid: child.pid as number,
    client: new Client({ apiUrl: url }),
    logs: () => `${stdout}\n${stderr}`,
    stop: async () => {
      child.kill("SIGTERM");
      await exited(child);
    },
    kill: async () => {
      child.kill("SIGKILL");
      await exited(child);
    },
  };
}
