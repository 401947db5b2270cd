/**
 * Like-for-like comparison of two agent-server source trees (a base revision and a change): both
 * serve the example graph from their own sources on one Redis, and 32 clients alternate between
 * them in short windows, so the machine's drift (half its speed over minutes here) hits both
 * alike. Prints each tree's median CPU per run and runs/s over the windows, and the ratio of the
 * medians. Usage (or `make bench-compare BASE=<git ref>`):
 *
 *   node --conditions=source bench/support/compare-servers.ts <base tree> <changed tree> [rounds]
 */
import { randomUUID } from "node:crypto";
import { Agent } from "node:http";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { ServerProcess } from "../../agent-server/src/runs/testing/process.ts";
import { startRedisServer } from "../../testing/redis-server.ts";
import { round } from "./measure.ts";
import { load, measureServerWindow, median, type ServerWindow, statefulCycle } from "./run-load.ts";

const CLIENTS = 32;
const WARMUP_ROUNDS = 4;
const WINDOW_SECONDS = 3;
const serverEnv = { N_WORKERS: String(CLIENTS), RUN_LEASE_MS: "15000", RUN_POLL_MS: "1000" };

/** The tree's own `spawnServer`, so the server runs that tree's code. */
async function startServer(tree: string, redisUrl: string): Promise<ServerProcess> {
  const module = pathToFileURL(join(tree, "agent-server/src/runs/testing/process.ts")).href;
  const { spawnServer } = (await import(module)) as typeof import("../../agent-server/src/runs/testing/process.ts");
  const project = join(tree, "agent-server/example/langgraph.json");
  return spawnServer(redisUrl, `compare-${randomUUID().slice(0, 8)}:`, serverEnv, project);
}

const [baseTree, changedTree, roundsArgument] = process.argv.slice(2);
if (!baseTree || !changedTree) {
  console.error("usage: compare-servers.ts <base tree> <changed tree> [rounds]");
  process.exit(2);
}
const rounds = Number(roundsArgument ?? 12);
const trees = [resolve(baseTree), resolve(changedTree)] as const;
const redis = await startRedisServer();
const servers: ServerProcess[] = [];
const agents = trees.map(() => new Agent({ keepAlive: true, maxSockets: CLIENTS * 2 }));
try {
  for (const tree of trees) servers.push(await startServer(tree, redis.url));
  const windows: ServerWindow[][] = trees.map(() => []);
  for (let i = 0; i < WARMUP_ROUNDS + rounds; i++) {
    // Alternate which tree goes first, so neither always follows the other's load.
    for (const which of i % 2 === 0 ? [0, 1] : [1, 0]) {
      const server = servers[which] as ServerProcess;
      const agent = agents[which] as Agent;
      await load(CLIENTS, 1, statefulCycle([server.url], agent, []));
      const window = await measureServerWindow(server, agent, CLIENTS, WINDOW_SECONDS);
      if (i >= WARMUP_ROUNDS) windows[which]?.push(window);
    }
  }
  const summary = trees.map((tree, which) => {
    const measured = windows[which] ?? [];
    const cpu = median(measured.map((w) => w.cpuMsPerRun));
    console.log(
      `${which === 0 ? "base   " : "changed"} ${tree}: CPU per run ${round(cpu, 3)} ms (windows: ${measured
        .map((w) => round(w.cpuMsPerRun, 2))
        .join(" ")}), ${round(median(measured.map((w) => w.perSecond)))} runs/s, ${measured.reduce(
        (sum, w) => sum + w.failed,
        0,
      )} failed cycles`,
    );
    return cpu;
  });
  console.log(`changed / base CPU per run: ${round((summary[1] as number) / (summary[0] as number), 3)}`);
} finally {
  for (const agent of agents) agent.destroy();
  await Promise.all(servers.map((server) => server.stop()));
  await redis.stop();
}
