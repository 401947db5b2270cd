import { z } from "zod";
import { integerSetting, parseSettings } from "../config.ts";
import { DEFAULT_MAX_LOGGED_EVENTS } from "../stream/event-log.ts";

/** Tuning of the run queue and streams, from the environment (defaults suit production). */
export interface RunSettings {
  /** A run whose worker stops renewing its lease for this long is taken over (RUN_LEASE_MS). */
  leaseMs: number;
  /** Executions of one run before it is failed (RUN_MAX_ATTEMPTS). */
  maxAttempts: number;
  /** Longest a worker sleeps between queue checks without a wake-up signal (RUN_POLL_MS). */
  pollMs: number;
  /** Silence on SSE streams and waits after which keep-alive bytes are sent (STREAM_HEARTBEAT_MS). */
  heartbeatMs: number;
  /**
   * A streaming client that takes none of the events sent to it for this long is disconnected
   * (STREAM_STALL_TIMEOUT_MS); until then its stream waits, holding one event.
   */
  stallMs: number;
  /** Most entries one run's event log keeps; the oldest are dropped beyond it (RUN_EVENT_LOG_MAX_EVENTS). */
  maxLoggedEvents: number;
}

const RunSettingsSchema = z.object({
  leaseMs: integerSetting("RUN_LEASE_MS", 100, 3_600_000),
  maxAttempts: integerSetting("RUN_MAX_ATTEMPTS", 1, 100),
  pollMs: integerSetting("RUN_POLL_MS", 10, 60_000),
  heartbeatMs: integerSetting("STREAM_HEARTBEAT_MS", 100, 60_000),
  stallMs: integerSetting("STREAM_STALL_TIMEOUT_MS", 100, 3_600_000),
  maxLoggedEvents: integerSetting("RUN_EVENT_LOG_MAX_EVENTS", 100, 100_000_000),
});

/** Throws ConfigError (the CLI exits with code 2) for invalid values. */
export function runSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): RunSettings {
  return parseSettings(
    RunSettingsSchema,
    {
      leaseMs: env.RUN_LEASE_MS ?? 15_000,
      maxAttempts: env.RUN_MAX_ATTEMPTS ?? 3,
      pollMs: env.RUN_POLL_MS ?? 1000,
      heartbeatMs: env.STREAM_HEARTBEAT_MS ?? 5000,
      stallMs: env.STREAM_STALL_TIMEOUT_MS ?? 60_000,
      maxLoggedEvents: env.RUN_EVENT_LOG_MAX_EVENTS ?? DEFAULT_MAX_LOGGED_EVENTS,
    },
    "run settings",
  );
}
