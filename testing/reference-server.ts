import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./redis-server.ts";

const repoBin = join(dirname(fileURLToPath(import.meta.url)), "../node_modules/.bin");
/** Lets the reference read schemas from types in this repository (see the file). */
const typescriptPreload = join(dirname(fileURLToPath(import.meta.url)), "reference-typescript.cjs");

/**
 * The reference in-memory server (`langgraphjs dev` from `@langchain/langgraph-cli`), when installed:
 * `AGENTPLANE_REFERENCE_CLI=/path/to/langgraphjs`, or the package installed in this repository.
 */
export function referenceCliPath(env = process.env): string | undefined {
  const candidates = [env.AGENTPLANE_REFERENCE_CLI, join(repoBin, "langgraphjs")];
  return candidates.find((path): path is string => Boolean(path && existsSync(path)));
}

export interface ReferenceServer {
  url: string;
  /** What the server printed so far (for failure messages). */
  logs(): string;
  stop(): Promise<void>;
}

async function waitUntilOk(url: string, child: ChildProcess, logs: () => string, deadlineMs: number): Promise<void> {
  const start = Date.now();
  while (Date.now() - start < deadlineMs) {
    if (child.exitCode !== null) throw new Error(`reference server exited with code ${child.exitCode}:\n${logs()}`);
    const ok = await fetch(`${url}/ok`).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`reference server did not answer /ok:\n${logs()}`);
}

/**
 * Serves `configPath` (a langgraph.json) with the reference server on a free port, without file
 * watching. The server keeps its "in-memory" state in `.langgraph_api/` beside the project and
 * reloads it at start; that directory is removed before and after, so every start is empty.
 */
export async function startReferenceServer(
  cli: string,
  configPath: string,
  env: NodeJS.ProcessEnv = {},
): Promise<ReferenceServer> {
  const port = await freePort();
  const stateDir = join(dirname(configPath), ".langgraph_api");
  rmSync(stateDir, { recursive: true, force: true });
  const child = spawn(
    cli,
    ["dev", "--port", String(port), "--host", "127.0.0.1", "--no-browser", "--no-reload", "--config", configPath],
    {
      cwd: dirname(configPath),
      // Node 24 from this repository first on PATH: the CLI's shebang is `env node`.
      env: {
        ...process.env,
        ...env,
        PATH: `${repoBin}:${process.env.PATH}`,
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --require ${typescriptPreload}`.trim(),
      },
      stdio: ["ignore", "pipe", "pipe"],
      // Its own process group: the CLI spawns the API server as a child, and both must stop.
      detached: true,
    },
  );
  let output = "";
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const logs = () => output;
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      process.kill(-(child.pid as number), "SIGTERM");
      await exited;
    }
    rmSync(stateDir, { recursive: true, force: true });
  };
  try {
    await waitUntilOk(url, child, logs, 60_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, logs, stop };
}
