import { Agent, request } from "node:http";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";

/**
 * HTTP load as many users: closed-loop clients in a worker thread (so they do not compete with a
 * server on the main thread), each request with its user's bearer token, the latency of each
 * successful one kept. Any failed request fails the measurement.
 */
export interface UserLoad {
  /** Request `n` goes to `paths[n % paths.length]` with `tokens[n % tokens.length]` (none when empty). */
  url: string;
  paths: string[];
  tokens: string[];
  method: "GET" | "POST";
  /** Request `n` sends `bodies[n % bodies.length]` (none when empty). */
  bodies: string[];
  concurrency: number;
  durationMs: number;
}

export interface UserLoadResult {
  latencies: number[];
  seconds: number;
  failed: number;
  firstError?: string;
}

/** The client loops, in a worker thread so they do not compete with the server for its event loop. */
async function generate(load: UserLoad): Promise<UserLoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: load.concurrency });
  const latencies: number[] = [];
  let failed = 0;
  let firstError: string | undefined;
  let sequence = 0;
  const start = performance.now();
  const deadline = start + load.durationMs;
  const send = (n: number) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const token = load.tokens.length > 0 ? load.tokens[n % load.tokens.length] : undefined;
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (token) headers.authorization = `Bearer ${token}`;
      const req = request(
        `${load.url}${load.paths[n % load.paths.length]}`,
        { method: load.method, agent, headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(load.bodies.length > 0 ? load.bodies[n % load.bodies.length] : undefined);
    });
  await Promise.all(
    Array.from({ length: load.concurrency }, async () => {
      while (performance.now() < deadline) {
        const sent = performance.now();
        const { status, text } = await send(sequence++);
        if (status >= 200 && status < 300) latencies.push(performance.now() - sent);
        else {
          failed++;
          firstError ??= `${status} ${text}`;
        }
      }
    }),
  );
  agent.destroy();
  return { latencies, seconds: (performance.now() - start) / 1000, failed, firstError };
}

if (!isMainThread && (workerData as { userLoad?: UserLoad })?.userLoad) {
  parentPort?.postMessage(await generate((workerData as { userLoad: UserLoad }).userLoad));
}

export async function measureUserLoad(load: UserLoad): Promise<UserLoadResult> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { userLoad: load } });
  const result = await new Promise<UserLoadResult>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  await worker.terminate();
  if (result.failed > 0) throw new Error(`${result.failed} requests failed, first: ${result.firstError}`);
  return result;
}
