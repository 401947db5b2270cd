import { z } from "zod";

/** Any JSON object (not an array, not null). */
export const JsonObjectSchema = z.record(z.string(), z.unknown());

/**
 * An optional field that also accepts an explicit `null` (the Python SDK sends `None` for
 * unset fields) and hands the handler `undefined` for both. Documented as the plain optional
 * field (the null step is a preprocess, which the OpenAPI output side leaves out).
 */
export const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (value === null ? undefined : value), schema.optional());

export const MINUTE_MS = 60_000;

/**
 * A TTL in minutes, up to 1,000 years: expiry times stay valid dates (a Date ends in the year
 * 275760) and exact in Redis scores.
 */
export const TtlMinutesSchema = z
  .number()
  .positive("ttl must be a positive number of minutes")
  .max(525_600_000, "ttl must be at most 525600000 minutes (1,000 years)");

export const LimitSchema = z.number().int().min(1).max(1000).default(10);
export const OffsetSchema = z.number().int().min(0).default(0);
export const SortOrderSchema = z.enum(["asc", "desc"]);
export const IfExistsSchema = z.enum(["raise", "do_nothing"]);

/** Timestamps are ISO-8601 strings on the wire. */
export const TimestampSchema = z.iso.datetime({ offset: true });
