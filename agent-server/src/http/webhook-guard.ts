import { unprocessable, type ValidationIssue } from "@agentplane/common";
import type { RequestHandler } from "express";
import { type WebhookPolicy, webhookRefusal } from "../runs/worker/webhook-policy.ts";

const webhookOf = (payload: unknown): unknown =>
  payload && typeof payload === "object" ? (payload as { webhook?: unknown }).webhook : undefined;

/**
 * The absolute `webhook` URLs of a run-creating body, with where they are: one object, the array
 * of a batch, or the `params` of a thread-stream command (`run.start`).
 */
function webhooks(body: unknown): [(string | number)[], string][] {
  const payloads: [(string | number)[], unknown][] = Array.isArray(body)
    ? body.map((item, index) => [["body", index], item])
    : [
        [["body"], body],
        [["body", "params"], body && typeof body === "object" ? (body as { params?: unknown }).params : undefined],
      ];
  return payloads.flatMap(([loc, payload]) => {
    const webhook = webhookOf(payload);
    return typeof webhook === "string" && /^https?:\/\//i.test(webhook) ? [[[...loc, "webhook"], webhook]] : [];
  });
}

/** Routes that create runs or crons: every such path has `/runs` in it, or is a thread's `/commands`. */
const createsRuns = (method: string, path: string) =>
  (method === "POST" || method === "PATCH") && (path.includes("/runs") || path.endsWith("/commands"));

/**
 * Refuses, with 422 at the field, absolute webhook URLs of runs and crons whose host is internal
 * or resolves to a loopback, link-local or private address the policy does not allow. Paths of
 * this server (relative webhooks) are not checked. Delivery checks again (`sendWebhook`), as DNS
 * may answer differently by then; it also covers runs started over the thread-stream WebSocket.
 */
export function webhookGuard(policy: WebhookPolicy): RequestHandler {
  return async (req, _res, next) => {
    if (!createsRuns(req.method, req.path)) return next();
    const issues: ValidationIssue[] = [];
    for (const [loc, url] of webhooks(req.body)) {
      const refusal = await webhookRefusal(url, policy);
      if (refusal) issues.push({ loc, msg: refusal, type: "webhook_refused" });
    }
    next(issues.length > 0 ? unprocessable(issues) : undefined);
  };
}
