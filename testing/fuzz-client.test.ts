import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { send } from "./fuzz-client.ts";

/** A server that answers `/stream` with headers and then nothing, and `/cut` by closing mid-answer. */
let server: http.Server;
let url: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(": open\n\n");
    if (req.url === "/cut") setTimeout(() => res.socket?.destroy(), 20);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("the fuzz client", () => {
  it("calls an answer it stopped reading at its own deadline a timeout, not a network failure", async () => {
    const answer = await send(url, { method: "GET", url: "/stream" }, 200);
    expect(answer.status).toBe("timeout");
  });

  it("calls an answer the server cut short a network failure", async () => {
    const answer = await send(url, { method: "GET", url: "/cut" }, 5_000);
    expect(answer.status).toBe("network");
    expect(answer.detail).toContain("aborted");
  });
});
