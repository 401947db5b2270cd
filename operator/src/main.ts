#!/usr/bin/env node
import { pino } from "pino";
import { settingsFromEnv } from "./config.ts";
import { loadKubeConnection } from "./kube/config.ts";
import { startOperator } from "./operator.ts";

/** Entry point: kubeconfig from KUBECONFIG, ~/.kube/config or the in-cluster service account. */
async function main(): Promise<void> {
  const log = pino({ name: "agentplane-operator", level: process.env.LOG_LEVEL ?? "info" });
  const settings = settingsFromEnv(process.env);
  const operator = await startOperator(loadKubeConnection(), settings, log);
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, "shutting down");
    operator.close().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  // As controller-runtime does: a replica that lost its lease exits at once, in-flight work and all,
  // and its restart campaigns again with fresh caches.
  void operator.lostLeadership.then(() => process.exit(1));
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
