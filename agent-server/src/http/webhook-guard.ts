import { unprocessable, type ValidationIssue } from "@agentplane/common";
import type { RequestHandler } from "express";
import { type WebhookPolicy, webhookRefusal } from "../runs/worker/webhook-policy.ts";

/** The `webhook` fields of a run-creating body: one object, or the array of a batch. */
function webhooks(body: unknown): [(string | number)[], string][] {
  const payloads = Array.isArray(body)
    ? body.map((item, index) => [["body", index], item] as const)
    : [[["body"], body] as const];
  return payloads.flatMap(([loc, payload]) => {
    const webhook = payload && typeof payload === "object" ? (payload as { webhook?: unknown }).webhook : undefined;
    return typeof webhook === "string" && /^https?:\/\//i.test(webhook) ? [[[...loc, "webhook"], webhook]] : [];
  });
}

/**
 * Refuses, with 422 at the field, absolute webhook URLs of runs and crons (every such route has
 * `/runs` in its path) whose host is internal or resolves to a loopback, link-local or private
 * address the policy does not allow. Paths of this server (relative webhooks) are not checked.
 * Delivery checks again (`sendWebhook`), as DNS may answer differently by then.
 */
export function webhookGuard(policy: WebhookPolicy): RequestHandler {
  return async (req, _res, next) => {
    if ((req.method !== "POST" && req.method !== "PATCH") || !req.path.includes("/runs")) return next();
    const issues: ValidationIssue[] = [];
    for (const [loc, url] of webhooks(req.body)) {
      const refusal = await webhookRefusal(url, policy);
      if (refusal) issues.push({ loc, msg: refusal, type: "webhook_refused" });
    }
    next(issues.length > 0 ? unprocessable(issues) : undefined);
  };
}
