import { type Logger, pino } from "pino";

export type { Logger };

/** Headers and fields that must never reach a log line. */
const REDACTED = [
  "req.headers.authorization",
  "req.headers['x-api-key']",
  "req.headers.cookie",
  "*.client_secret",
  "*.secrets",
  "*.api_key",
  "*.password",
];

export function createLogger(name: string, level = process.env.LOG_LEVEL ?? "info"): Logger {
  return pino({ name, level, redact: { paths: REDACTED, censor: "[redacted]" } });
}
