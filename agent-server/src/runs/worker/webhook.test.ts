import { createLogger } from "@agentplane/common";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Loopback } from "../../http/loopback.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../testing/webhook-receiver.ts";
import type { WebhookPayload } from "./webhook.ts";
import { sendWebhook } from "./webhook.ts";
import { WebhookPolicy } from "./webhook-policy.ts";

const logger = createLogger("webhook-test", "silent");
/** The receivers listen on loopback, which only an allow-list entry opens to webhooks. */
const fast = { attempts: 3, timeoutMs: 2_000, backoffMs: 10, policy: new WebhookPolicy(["127.0.0.1"]) };
const payload = {
  run_id: "run-1",
  status: "success",
  run_started_at: "2024-01-01T00:00:00.000Z",
  run_ended_at: "2024-01-01T00:00:01.000Z",
  values: { done: true },
} as unknown as Omit<WebhookPayload, "webhook_sent_at">;

describe("sendWebhook", () => {
  let receiver: WebhookReceiver;
  let url: string;
  let received: WebhookReceiver["received"];
  /** Status codes to answer with, in order; 200 once they run out. */
  let answers: number[];

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    ({ origin: url, received, answers } = receiver);
  });
  afterAll(() => receiver.close());
  afterEach(() => {
    received.length = 0;
    answers.length = 0;
  });

  it("posts the run to an absolute URL, retrying until it is accepted", async () => {
    answers.push(500);
    expect(await sendWebhook(`${url}/hook?token=t`, payload, logger, fast)).toBe(true);
    expect(received.map((r) => r.path)).toEqual(["/hook?token=t", "/hook?token=t"]);
    expect(received[1]?.body).toMatchObject({ run_id: "run-1", values: { done: true } });
    expect(received[1]?.body.webhook_sent_at).toEqual(expect.any(String));
  });

  it("sends a path to the server bound as this process's loopback, with the loopback's key", async () => {
    const loopback = new Loopback();
    loopback.bind(url);
    try {
      expect(await sendWebhook("/hooks/done", payload, logger, fast)).toBe(true);
    } finally {
      loopback.release();
    }
    expect(received).toHaveLength(1);
    expect(received[0]?.path).toBe("/hooks/done");
    expect(received[0]?.headers["x-api-key"]).toEqual(expect.any(String));
    expect(received[0]?.body).toMatchObject({ run_id: "run-1" });
  });

  it("refuses loopback, link-local and internal hosts by default, without a request or a retry", async () => {
    const strict = { ...fast, policy: new WebhookPolicy([]) };
    const port = new URL(url).port;
    for (const target of [`${url}/hook`, `http://localhost:${port}/hook`, "http://169.254.169.254/latest"]) {
      const started = Date.now();
      expect(await sendWebhook(target, payload, logger, strict)).toBe(false);
      expect(Date.now() - started).toBeLessThan(1000);
    }
    expect(received).toHaveLength(0);
  });

  it("delivers to an allowed name at the address it checked", async () => {
    const byName = { ...fast, policy: new WebhookPolicy(["localhost"]) };
    const port = new URL(url).port;
    // localhost may resolve to ::1 first, where nothing listens: the address list is kept for happy eyeballs.
    expect(await sendWebhook(`http://localhost:${port}/named`, payload, logger, byName)).toBe(true);
    expect(received.map((r) => r.path)).toEqual(["/named"]);
  });

  it("does not follow redirects (a receiver cannot bounce the run to an internal address)", async () => {
    answers.push(302, 302, 302);
    expect(await sendWebhook(`${url}/redirecting`, payload, logger, fast)).toBe(false);
    // fetch would have followed each 302 to /elsewhere.
    expect(received.map((r) => r.path)).toEqual(["/redirecting", "/redirecting", "/redirecting"]);
  });

  it("gives up on a path when no server is listening in the process, without throwing", async () => {
    expect(await sendWebhook("/hooks/done", payload, logger, fast)).toBe(false);
    expect(received).toHaveLength(0);
  });
});
