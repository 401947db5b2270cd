import { appendFileSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Readable } from "node:stream";

/**
 * A pod's log file (`<logDir>/<pod>.log`): one line per line of output, prefixed with the time the
 * kubelet read it, as `kubectl logs --timestamps` prints it (the real kubelet keeps the time per line
 * in its CRI log files the same way).
 */
export const podLogPath = (logDir: string, pod: string) => join(logDir, `${pod}.log`);

/** Appends each complete line of `stream` to `file` with its timestamp; a last unterminated line on end. */
export function timestampLines(stream: Readable, file: string): void {
  let pending = "";
  const write = (lines: string[]) => {
    if (lines.length === 0) return;
    const now = new Date().toISOString();
    appendFileSync(file, lines.map((line) => `${now} ${line}\n`).join(""));
  };
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    const lines = (pending + chunk).split("\n");
    pending = lines.pop() ?? "";
    write(lines);
  });
  stream.on("end", () => {
    if (pending) write([pending]);
    pending = "";
  });
}

export interface ContainerLogServer {
  port: number;
  close(): Promise<void>;
}

/**
 * The kubelet's `GET /containerLogs/{namespace}/{pod}/{container}`, which the API server forwards
 * `pods/log` to: `timestamps`, `sinceTime`, `sinceSeconds`, `tailLines` and `limitBytes` as the real
 * kubelet applies them. `containerOf` says which container a pod this kubelet runs has (undefined: 404).
 */
export async function serveContainerLogs(
  logDir: string,
  containerOf: (namespace: string, pod: string) => string | undefined,
): Promise<ContainerLogServer> {
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    const match = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    const [namespace, pod, container] = (match?.slice(1) ?? []).map(decodeURIComponent);
    if (request.method !== "GET" || !namespace || !pod || !container || containerOf(namespace, pod) !== container) {
      response.writeHead(404, { "Content-Type": "text/plain" });
      return void response.end(`container ${container} of pod ${namespace}/${pod} not found on this node\n`);
    }
    let lines: string[];
    try {
      lines = readFileSync(podLogPath(logDir, pod), "utf8").split("\n").filter(Boolean);
    } catch {
      lines = [];
    }
    const query = url.searchParams;
    const sinceSeconds = Number(query.get("sinceSeconds") ?? Number.NaN);
    const since = query.get("sinceTime")
      ? Date.parse(query.get("sinceTime") ?? "")
      : Number.isFinite(sinceSeconds)
        ? Date.now() - sinceSeconds * 1000
        : undefined;
    if (since !== undefined && !Number.isNaN(since)) {
      lines = lines.filter((line) => Date.parse(line.slice(0, line.indexOf(" "))) >= since);
    }
    const tail = Number(query.get("tailLines") ?? Number.NaN);
    if (Number.isInteger(tail) && tail >= 0) lines = tail === 0 ? [] : lines.slice(-tail);
    if (query.get("timestamps") !== "true") lines = lines.map((line) => line.slice(line.indexOf(" ") + 1));
    let text = Buffer.from(lines.map((line) => `${line}\n`).join(""));
    const limit = Number(query.get("limitBytes") ?? Number.NaN);
    if (Number.isInteger(limit) && limit > 0) text = text.subarray(0, limit);
    response.writeHead(200, { "Content-Type": "text/plain" });
    response.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
