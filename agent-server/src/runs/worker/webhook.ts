import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import type { Logger } from "@agentplane/common";
import { boundLoopbackFetch } from "../../http/loopback.ts";
import type { Run } from "../schemas.ts";
import { resolveHost, WebhookPolicy, webhookHost } from "./webhook-policy.ts";

export interface WebhookOptions {
  attempts: number;
  timeoutMs: number;
  /** Delay before the second attempt; doubles after each failure. */
  backoffMs: number;
  /** Which internal hosts absolute webhooks may reach (none by default). */
  policy: WebhookPolicy;
}

export const defaultWebhookOptions: WebhookOptions = {
  attempts: 3,
  timeoutMs: 10_000,
  backoffMs: 500,
  policy: new WebhookPolicy([]),
};

export interface WebhookPayload extends Run {
  run_started_at: string;
  run_ended_at: string;
  webhook_sent_at: string;
  values: unknown;
  error?: string;
}

/** A webhook the policy refuses: not retried, as resolving again gives the same answer. */
class RefusedWebhook extends Error {}

/**
 * POSTs `body` to an absolute URL and answers its status. The host is resolved once and checked
 * against the policy, and the connection goes to exactly the addresses checked (a `lookup` that
 * answers them), so a DNS answer that changes in between (rebinding) cannot redirect it.
 * Redirects are not followed.
 */
async function postAbsolute(url: URL, body: string, options: WebhookOptions): Promise<number> {
  const host = webhookHost(url);
  const addresses = await resolveHost(host);
  if (addresses.length === 0) throw new Error("webhook host did not resolve");
  const refusal = options.policy.refusal(host, addresses);
  if (refusal) throw new RefusedWebhook(refusal);
  const lookup: LookupFunction = (_hostname, lookupOptions, callback) => {
    const [first] = addresses as [string];
    if (lookupOptions.all)
      callback(
        null,
        addresses.map((address) => ({ address, family: isIP(address) })),
      );
    else callback(null, first, isIP(first));
  };
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<number>((resolve, reject) => {
    const request = send(
      url,
      {
        method: "POST",
        headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) },
        lookup,
        signal: AbortSignal.timeout(options.timeoutMs),
      },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}

/** POSTs `body` to a path of this server, through its own app (custom routes included). */
async function postRelative(path: string, body: string, timeoutMs: number): Promise<number> {
  const response = await boundLoopbackFetch()(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body,
    signal: AbortSignal.timeout(timeoutMs),
  });
  await response.body?.cancel();
  return response.status;
}

/**
 * POSTs the finished run to its webhook. A path (`/hooks/done`) is this server's own route, as
 * on the reference server: the project's custom routes receive it. An absolute URL must not
 * reach internal addresses unless the policy allows them (checked at run creation too; checked
 * again here because DNS may answer differently now). Retries failures (network errors,
 * timeouts, non-2xx) and only logs when every attempt failed: a webhook never fails the run.
 * The URL is not logged as it may carry a token.
 */
export async function sendWebhook(
  url: string,
  payload: Omit<WebhookPayload, "webhook_sent_at">,
  logger: Logger,
  options: WebhookOptions = defaultWebhookOptions,
): Promise<boolean> {
  let delay = options.backoffMs;
  for (let attempt = 1; attempt <= options.attempts; attempt++) {
    try {
      const body = JSON.stringify({ ...payload, webhook_sent_at: new Date().toISOString() });
      const status = url.startsWith("/")
        ? await postRelative(url, body, options.timeoutMs)
        : await postAbsolute(new URL(url), body, options);
      if (status >= 200 && status < 300) return true;
      logger.warn({ run_id: payload.run_id, status, attempt }, "webhook answered with an error");
    } catch (error) {
      if (error instanceof RefusedWebhook) {
        logger.warn({ run_id: payload.run_id, reason: error.message }, "webhook refused");
        return false;
      }
      logger.warn({ run_id: payload.run_id, err: (error as Error).message, attempt }, "webhook call failed");
    }
    if (attempt < options.attempts) {
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay *= 2;
    }
  }
  return false;
}
