import { readdirSync, readFileSync } from "node:fs";
import { type Agent, request } from "node:http";
import { createClient } from "redis";

/**
 * The load the `runs` bench (and `compare-servers.ts`) puts on agent servers: 32 closed-loop
 * clients doing what a chat client does, and how to read a server process's CPU time.
 */

export const input = { messages: [{ role: "human", content: "how fast is this server?" }] };

/** One JSON request over a kept-alive connection; resolves with the status and the body text. */
export function call(
  agent: Agent,
  url: string,
  method: "POST" | "GET",
  body?: unknown,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent, headers: { "content-type": "application/json" } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

export interface Load {
  perSecond: number;
  latencies: number[];
  failed: number;
}

/** `clients` loops doing `cycle` for `seconds`; latencies are of the whole cycle. */
export async function load(
  clients: number,
  seconds: number,
  cycle: (client: number) => Promise<boolean>,
): Promise<Load> {
  const latencies: number[] = [];
  let failed = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      while (performance.now() < end) {
        const began = performance.now();
        if (await cycle(client).catch(() => false)) latencies.push(performance.now() - began);
        else failed++;
      }
    }),
  );
  return { perSecond: latencies.length / ((performance.now() - start) / 1000), latencies, failed };
}

/** Create a thread, then run the agent on it and wait for the answer: the run latency is the second call. */
export function statefulCycle(urls: string[], agent: Agent, runLatencies: number[]) {
  return async (client: number) => {
    const url = urls[client % urls.length] as string;
    const thread = await call(agent, `${url}/threads`, "POST", {});
    if (thread.status !== 200) return false;
    const { thread_id } = JSON.parse(thread.text) as { thread_id: string };
    const began = performance.now();
    const run = await call(agent, `${url}/threads/${thread_id}/runs/wait`, "POST", { assistant_id: "agent", input });
    runLatencies.push(performance.now() - began);
    return run.status === 200 && run.text.includes("how fast");
  };
}

/**
 * CPU seconds a process used so far, from /proc; undefined where there is none. Summed over its
 * threads' `schedstat` (nanoseconds, where the kernel keeps it): `stat` counts 10 ms ticks, which
 * for a phase of a few runs is an error of a tenth or more.
 */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    let nanoseconds = 0;
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      nanoseconds += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0]);
    }
    if (Number.isFinite(nanoseconds)) return nanoseconds / 1e9;
  } catch {
    // A thread may end between listing and reading: fall back to the ticks below.
  }
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

export interface ServerWindow {
  perSecond: number;
  /** Cycles completed in the window. */
  runs: number;
  /** Server CPU (user + system, all its threads) per completed cycle. */
  cpuMsPerRun: number;
  failed: number;
}

/**
 * `clients` closed-loop stateful cycles against one server process for `seconds`: runs/s and the
 * server's CPU per run; run latencies go to `latencies` when given.
 */
export async function measureServerWindow(
  server: { url: string; pid: number },
  agent: Agent,
  clients: number,
  seconds: number,
  latencies: number[] = [],
): Promise<ServerWindow> {
  const cpuBefore = processCpuSeconds(server.pid);
  const window = await load(clients, seconds, statefulCycle([server.url], agent, latencies));
  const cpuAfter = processCpuSeconds(server.pid);
  const cpuMsPerRun =
    cpuBefore === undefined || cpuAfter === undefined
      ? Number.NaN
      : ((cpuAfter - cpuBefore) * 1000) / window.latencies.length;
  return { perSecond: window.perSecond, runs: window.latencies.length, cpuMsPerRun, failed: window.failed };
}

/** CPU seconds (user + system) a Redis server used so far, from its `INFO cpu`. */
export async function redisCpuSeconds(redisUrl: string): Promise<number> {
  const client = createClient({ url: redisUrl });
  await client.connect();
  try {
    const info = await client.info("cpu");
    const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? Number.NaN);
    return field("used_cpu_user") + field("used_cpu_sys");
  } finally {
    await client.close();
  }
}
