import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedWebhook {
  /** The request's path and query. */
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** A webhook receiver on loopback (webhooks reach it only with `127.0.0.1` allowed). */
export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>`, to put a path after. */
  origin: string;
  /** `<origin>/hook`. */
  url: string;
  /** Every request, in order of arrival, also those answered with an error. */
  received: ReceivedWebhook[];
  /** Statuses to answer the next requests with, in order; afterwards the receiver's `status`. */
  answers: number[];
  close(): Promise<void>;
}

/** Starts a receiver that answers `status` (default 200) after any queued `answers`, or never when `hang`. */
export async function startWebhookReceiver(
  options: { status?: number; hang?: boolean } = {},
): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const answers: number[] = [];
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (chunk) => {
      text += chunk;
    });
    req.on("end", () => {
      received.push({ path: req.url ?? "", headers: req.headers, body: JSON.parse(text) });
      if (options.hang) return;
      const status = answers.shift() ?? options.status ?? 200;
      // A redirect names somewhere to go, so a client that followed it would show up here.
      res.writeHead(status, status >= 300 && status < 400 ? { location: "/elsewhere" } : {}).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    url: `${origin}/hook`,
    received,
    answers,
    close: () =>
      new Promise<void>((resolve) => {
        // A hanging receiver still holds its requests open.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
