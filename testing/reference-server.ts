import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../testing/redis-server.ts";

const repoBin = join(dirname(fileURLToPath(import.meta.url)), "../../node_modules/.bin");

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
  stop(): Promise<void>;
}

async function waitUntilOk(url: string, child: ChildProcess, deadlineMs: number): Promise<void> {
  const start = Date.now();
  while (Date.now() - start < deadlineMs) {
    if (child.exitCode !== null) throw new Error(`reference server exited with code ${child.exitCode}`);
    const ok = await fetch(`${url}/ok`).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error("reference server did not answer /ok");
}

/** Serves `configPath` (a langgraph.json) with the reference server on a free port. */
export async function startReferenceServer(cli: string, configPath: string): Promise<ReferenceServer> {
  const port = await freePort();
  const child = spawn(
    cli,
    ["dev", "--port", String(port), "--host", "127.0.0.1", "--no-browser", "--config", configPath],
    // Node 24 from this repository first on PATH: the CLI's shebang is `env node`.
    { cwd: dirname(configPath), env: { ...process.env, PATH: `${repoBin}:${process.env.PATH}` }, stdio: "ignore" },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitUntilOk(url, child, 60_000);
  return {
    url,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
