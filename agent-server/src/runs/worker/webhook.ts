import type { Logger } from "@agentplane/common";
import { boundLoopbackFetch } from "../../http/loopback.ts";
import type { Run } from "../schemas.ts";

export interface WebhookOptions {
  attempts: number;
  timeoutMs: number;
  /** Delay before the second attempt; doubles after each failure. */
  backoffMs: number;
}

export const defaultWebhookOptions: WebhookOptions = { attempts: 3, timeoutMs: 10_000, backoffMs: 500 };

export interface WebhookPayload extends Run {
  run_started_at: string;
  run_ended_at: string;
  webhook_sent_at: string;
  values: unknown;
  error?: string;
}

/**
 * POSTs the finished run to its webhook. A path (`/hooks/done`) is this server's own route, as
 * on the reference server: the project's custom routes receive it. Retries failures (network
 * errors, timeouts, non-2xx) and only logs when every attempt failed: a webhook never fails the
 * run. The URL is not logged as it may carry a token.
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
      const send = url.startsWith("/") ? boundLoopbackFetch() : fetch;
      const response = await send(url, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ ...payload, webhook_sent_at: new Date().toISOString() }),
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      await response.body?.cancel();
      if (response.ok) return true;
      logger.warn({ run_id: payload.run_id, status: response.status, attempt }, "webhook answered with an error");
    } catch (error) {
      logger.warn({ run_id: payload.run_id, err: (error as Error).message, attempt }, "webhook call failed");
    }
    if (attempt < options.attempts) {
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay *= 2;
    }
  }
  return false;
}
