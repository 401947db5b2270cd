import { readdirSync, readFileSync } from "node:fs";
import { referenceCliPath, startReferenceServer } from "../../testing/reference-server.ts";

/**
 * The reference server (`langgraphjs dev`) for the `growth` area's `GROWTH_REFERENCE=1`, with the
 * CPU of its whole process tree: the CLI spawns tsx, which spawns the node process that serves, so
 * the CPU of one pid would miss most of the work.
 */

export interface MeasuredReference {
  url: string;
  /** CPU seconds (user + system) the reference's processes used so far. */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

interface ProcStat {
  ppid: number;
  cpuSeconds: number;
}

/** Parent and user + system CPU seconds of every process, from /proc/<pid>/stat. */
function allProcesses(): Map<number, ProcStat> {
  const processes = new Map<number, ProcStat>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // After the command name: state, ppid, …; utime and stime are fields 14 and 15 of stat(5).
      const fields = readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
      processes.set(Number(entry), {
        ppid: Number(fields[1]),
        cpuSeconds: (Number(fields[11]) + Number(fields[12])) / 100,
      });
    } catch {
      // The process ended while being read.
    }
  }
  return processes;
}

/** CPU seconds (user + system) used so far by `root` and every process descending from it. */
export function processTreeCpuSeconds(root: number): number {
  const processes = allProcesses();
  const children = new Map<number, number[]>();
  for (const [pid, { ppid }] of processes) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  let total = 0;
  const pending = [root];
  for (let pid = pending.pop(); pid !== undefined; pid = pending.pop()) {
    total += processes.get(pid)?.cpuSeconds ?? 0;
    pending.push(...(children.get(pid) ?? []));
  }
  return total;
}

/** The `langgraphjs dev` process serving on `port`: its command line holds `--port <port>`. */
function cliPid(port: string): number {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      const at = args.indexOf("--port");
      if (args.includes("dev") && at >= 0 && args[at + 1] === port) return Number(entry);
    } catch {
      // The process ended while being read.
    }
  }
  throw new Error(`no langgraphjs dev process found for port ${port}`);
}

/** Starts the reference on `project` (a langgraph.json); throws when it is not installed. */
export async function startMeasuredReference(project: string): Promise<MeasuredReference> {
  const cli = referenceCliPath();
  if (!cli) throw new Error("GROWTH_REFERENCE: the reference server is not installed (AGENTPLANE_REFERENCE_CLI)");
  // The reference bundles its own LangSmith tracing; keep it from calling out.
  const server = await startReferenceServer(cli, project, {
    LANGSMITH_TRACING: "false",
    LANGCHAIN_TRACING_V2: "false",
  });
  try {
    const root = cliPid(new URL(server.url).port);
    return { url: server.url, cpuSeconds: () => processTreeCpuSeconds(root), stop: () => server.stop() };
  } catch (error) {
    await server.stop();
    throw error;
  }
}
