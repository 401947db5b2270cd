import { z } from "zod";
import { integerSetting, parseSettings } from "../config.ts";
import type { FiringStep } from "./scheduler.ts";

export interface CronSettings {
  /** How often each process looks for due crons (CRON_TICK_MS, default 1000). */
  tickMs: number;
  /** Late slots within this window still fire after a restart (CRON_MISFIRE_GRACE_MS, default 60000). */
  misfireGraceMs: number;
  /** A claimed slot not acknowledged within this time is claimed again by any process (CRON_CLAIM_LEASE_MS, default 10000). */
  leaseMs: number;
  /** Test-only: the process kills itself (SIGKILL) right after this step of a firing (CRON_TEST_CRASH_AFTER). */
  crashAfter?: FiringStep;
  /** Test-only: accept 6-field schedules with a leading seconds field (CRON_ALLOW_SECONDS=true). */
  allowSeconds: boolean;
}

const Settings = z.object({
  tickMs: integerSetting("CRON_TICK_MS", 10, 60_000),
  misfireGraceMs: integerSetting("CRON_MISFIRE_GRACE_MS", 0, 86_400_000),
  leaseMs: integerSetting("CRON_CLAIM_LEASE_MS", 100, 3_600_000),
  crashAfter: z.enum(["claim", "run"], { error: "CRON_TEST_CRASH_AFTER must be claim or run" }).optional(),
  allowSeconds: z.enum(["true", "false", "1", "0"], { error: "CRON_ALLOW_SECONDS must be true or false" }),
});

/** Throws ConfigError (the CLI exits with code 2) for invalid values. */
export function cronSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): CronSettings {
  const { allowSeconds, ...rest } = parseSettings(
    Settings,
    {
      tickMs: env.CRON_TICK_MS ?? 1000,
      misfireGraceMs: env.CRON_MISFIRE_GRACE_MS ?? 60_000,
      leaseMs: env.CRON_CLAIM_LEASE_MS ?? 10_000,
      crashAfter: env.CRON_TEST_CRASH_AFTER || undefined,
      allowSeconds: env.CRON_ALLOW_SECONDS ?? "false",
    },
    "cron settings",
  );
  return { ...rest, allowSeconds: allowSeconds === "true" || allowSeconds === "1" };
}
