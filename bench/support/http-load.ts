import { Agent, request } from "node:http";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";

export interface HttpLoad {
  /** Several URLs are taken in turn, request `n` going to `url[n % url.length]`. */
  url: string | string[];
  method: "POST" | "GET";
  /** JSON body; every `{n}` becomes the request's sequence number, so requests differ. */
  bodyTemplate?: string;
  concurrency: number;
  durationMs: number;
}

interface LoadResult {
  completed: number;
  failed: number;
  seconds: number;
  firstError?: string;
}

/** One request over a kept-alive connection (node:http is far cheaper per call than fetch). */
function send(
  agent: Agent,
  load: HttpLoad,
  url: string,
  body: string | undefined,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: load.method, agent, headers: { "content-type": "application/json" } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** The client loops, run inside the worker thread. */
async function generate(load: HttpLoad): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: load.concurrency });
  const start = performance.now();
  const deadline = start + load.durationMs;
  let completed = 0;
  let failed = 0;
  let firstError: string | undefined;
  let sequence = 0;
  const urls = Array.isArray(load.url) ? load.url : [load.url];
  await Promise.all(
    Array.from({ length: load.concurrency }, async () => {
      while (performance.now() < deadline) {
        const n = sequence++;
        const url = urls[n % urls.length] as string;
        const { status, text } = await send(agent, load, url, load.bodyTemplate?.replaceAll("{n}", String(n)));
        if (status >= 200 && status < 300) completed++;
        else {
          failed++;
          firstError ??= `${status} ${text}`;
        }
      }
    }),
  );
  agent.destroy();
  return { completed, failed, seconds: (performance.now() - start) / 1000, firstError };
}

if (!isMainThread && (workerData as { httpLoad?: HttpLoad })?.httpLoad) {
  parentPort?.postMessage(await generate((workerData as { httpLoad: HttpLoad }).httpLoad));
}

/**
 * Requests per second the server at `load.url` answers, with the clients in a worker thread so
 * they do not compete with the server for its event loop. Throws if any request failed.
 */
export async function measureHttpThroughput(load: HttpLoad): Promise<number> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { httpLoad: load } });
  const result = await new Promise<LoadResult>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  await worker.terminate();
  if (result.failed > 0)
    throw new Error(`${result.failed} requests to ${String(load.url)} failed, first: ${result.firstError}`);
  return result.completed / result.seconds;
}
