import { type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { inspector, pausedReader, rss } from "./testing/memory.ts";
import { type ServerProcess, spawnServer } from "./testing/process.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Everything the server sends on `socket` until it closes the connection. */
function readToClose(socket: Socket): Promise<number> {
  return new Promise((resolve) => {
    let bytes = 0;
    socket.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
    });
    socket.once("close", () => resolve(bytes));
    socket.resume();
  });
}

/**
 * A finished run with a 20 MB event log (20,000 custom events of 1 KB), for clients to join: far
 * more than the kernel's buffers take for a client that does not read (about 4 MB here).
 */
async function largeRun(server: ServerProcess): Promise<{ path: string; bytes: number }> {
  const thread = await server.client.threads.create();
  const response = await fetch(`${server.url}/threads/${thread.thread_id}/runs/wait`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ assistant_id: "chatty", input: { count: 20_000, size: 1000 }, stream_mode: ["custom"] }),
  });
  expect(response.status).toBe(200);
  await response.text();
  const [run] = await server.client.runs.list(thread.thread_id);
  const path = `/threads/${thread.thread_id}/runs/${run?.run_id}/stream`;
  const bytes = (await (await fetch(`${server.url}${path}`)).text()).length;
  return { path, bytes };
}

describe("SSE backpressure", () => {
  let server: ServerProcess;
  let run: { path: string; bytes: number };

  beforeAll(async () => {
    server = await spawnServer(testRedisUrl(), uniquePrefix("sse-bp"), {
      STREAM_STALL_TIMEOUT_MS: "15000",
      NODE_OPTIONS: "--inspect=127.0.0.1:0",
    });
    run = await largeRun(server);
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("keeps 16 clients that stopped reading a 20 MB stream within 50 MB of server memory, then drops them", async () => {
    expect(run.bytes).toBeGreaterThan(20_000_000);
    const devtools = await inspector(server);
    // A full read first, so what one stream allocates on its way is in the baseline.
    await fetch(`${server.url}${run.path}`).then((response) => response.text());
    await devtools.collect();
    const before = rss(server.pid);
    const started = Date.now();
    const readers = await Promise.all(Array.from({ length: 16 }, () => pausedReader(server.url, run.path)));
    // Until the kernel's buffers are full and each stream waits (today's code has by then read
    // every client the whole log into memory).
    await sleep(12_000);
    await devtools.collect();
    const during = rss(server.pid);
    devtools.close();
    expect(during - before).toBeLessThan(50 * 1024 * 1024);
    // Past STREAM_STALL_TIMEOUT_MS the server has dropped them: what is left to read ends early.
    await sleep(30_000 - (Date.now() - started));
    const received = await Promise.all(readers.map(readToClose));
    for (const bytes of received) expect(bytes).toBeLessThan(run.bytes);
    // The server is still serving whole streams.
    expect((await (await fetch(`${server.url}${run.path}`)).text()).length).toBe(run.bytes);
  }, 90_000);
});
