import { CronExpressionParser } from "cron-parser";

/** Why a schedule or timezone was refused, worded for a 422. */
export class ScheduleError extends Error {}

/** Which schedules are accepted, by their number of fields. */
export interface ScheduleRules {
  fields: readonly number[];
}

/**
 * The API's schedules: 5 fields (minute hour day month weekday), as in LangGraph. A harness that
 * needs a firing every second passes rules with 6 (a leading seconds field) to the crons module.
 */
export const API_SCHEDULE_RULES: ScheduleRules = { fields: [5] };

export function validateTimezone(timezone: string): void {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
  } catch {
    throw new ScheduleError(`Unknown timezone "${timezone}" (expected an IANA name such as Europe/Paris)`);
  }
}

/** Throws ScheduleError unless `schedule` is a valid cron expression with as many fields as `rules` allow. */
export function validateSchedule(schedule: string, rules: ScheduleRules): void {
  const fields = schedule.trim().split(/\s+/).length;
  if (!rules.fields.includes(fields)) {
    throw new ScheduleError(
      `Schedule must have ${rules.fields.join(" or ")} fields (minute hour day month weekday), got ${fields}`,
    );
  }
  try {
    CronExpressionParser.parse(schedule, { strict: false }).next();
  } catch (error) {
    throw new ScheduleError(`Invalid schedule "${schedule}": ${(error as Error).message}`);
  }
}

/**
 * Epoch ms of the first firing strictly after `afterMs` in `timezone` (UTC when null), or null
 * when none comes before `endTime`.
 */
export function nextRunAfter(
  schedule: string,
  timezone: string | null,
  afterMs: number,
  endTime: string | null,
): number | null {
  const expression = CronExpressionParser.parse(schedule, {
    currentDate: new Date(afterMs),
    tz: timezone ?? "UTC",
    strict: false,
  });
  const next = expression.next().getTime();
  if (endTime !== null && next > Date.parse(endTime)) return null;
  return next;
}
