import { z } from "zod";
import { integerSetting, parseSettings } from "../config.ts";

export interface CronSettings {
  /** How often each process looks for due crons (CRON_TICK_MS, default 1000). */
  tickMs: number;
  /** Late slots within this window still fire after a restart (CRON_MISFIRE_GRACE_MS, default 60000). */
  misfireGraceMs: number;
  /** A claimed slot not acknowledged within this time is claimed again by any process (CRON_CLAIM_LEASE_MS, default 10000). */
  leaseMs: number;
}

const Settings = z.object({
  tickMs: integerSetting("CRON_TICK_MS", 10, 60_000),
  misfireGraceMs: integerSetting("CRON_MISFIRE_GRACE_MS", 0, 86_400_000),
  leaseMs: integerSetting("CRON_CLAIM_LEASE_MS", 100, 3_600_000),
});

/** Throws ConfigError (the CLI exits with code 2) for invalid values. */
export function cronSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): CronSettings {
  return parseSettings(
    Settings,
    {
      tickMs: env.CRON_TICK_MS ?? 1000,
      misfireGraceMs: env.CRON_MISFIRE_GRACE_MS ?? 60_000,
      leaseMs: env.CRON_CLAIM_LEASE_MS ?? 10_000,
    },
    "cron settings",
  );
}
