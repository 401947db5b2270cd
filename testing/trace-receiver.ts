import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface TraceReceiver {
  url: string;
  requests: ReceivedRequest[];
  close(): Promise<void>;
}

/**
 * A stand-in for LangSmith's run API and an OTLP/HTTP collector on a free port: it accepts what
 * is posted and keeps it for the test to read. `GET /info` is 404, as on a LangSmith that
 * predates it, so the client uses its defaults (uncompressed multipart). Paths under `/reject`
 * answer 400, as a collector that refuses the data.
 */
export async function startTraceReceiver(): Promise<TraceReceiver> {
  const requests: ReceivedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      requests.push({
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks),
      });
      if (req.url?.startsWith("/reject")) res.writeHead(400, { "content-type": "text/plain" }).end("rejected");
      else if (req.method === "GET")
        res.writeHead(404, { "content-type": "application/json" }).end('{"detail":"Not Found"}');
      else if (req.url?.startsWith("/v1/")) res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
      else res.writeHead(202, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
