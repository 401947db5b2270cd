import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import type { ServerProcess } from "./process.ts";

/** A process's resident memory, in bytes (what the machine actually gives it). */
export function rss(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kb) * 1024;
}

/**
 * The server process's DevTools protocol (it runs with `--inspect`), to collect its garbage before
 * each measurement: what is left is what the server holds, not what it has yet to collect.
 */
export async function inspector(server: ServerProcess): Promise<{ collect(): Promise<void>; close(): void }> {
  const url = /ws:\/\/\S+/.exec(server.logs())?.[0] as string;
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.addEventListener("open", resolve, { once: true });
    socket.addEventListener("error", reject, { once: true });
  });
  let sequence = 0;
  return {
    collect: () =>
      new Promise<void>((resolve) => {
        const id = ++sequence;
        const onMessage = (message: MessageEvent) => {
          if (JSON.parse(String(message.data)).id !== id) return;
          socket.removeEventListener("message", onMessage);
          resolve();
        };
        socket.addEventListener("message", onMessage);
        socket.send(JSON.stringify({ id, method: "HeapProfiler.collectGarbage" }));
      }),
    close: () => socket.close(),
  };
}

/** A raw HTTP client that sends the request and then never reads: its kernel buffers fill and stay full. */
export function pausedReader(url: string, path: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.pause();
    socket.once("error", reject);
    socket.once("connect", () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`);
      resolve(socket);
    });
  });
}
