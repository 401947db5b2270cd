import { unprocessable } from "@agentplane/common";
import { z } from "zod";

/** Any JSON object (not an array, not null). */
export const JsonObjectSchema = z.record(z.string(), z.unknown());

/** Most keys in a metadata object a request sends (each top-level key can become a Redis index key). */
export const METADATA_MAX_KEYS = 128;
/** Longest metadata key, in characters. */
export const METADATA_MAX_KEY_LENGTH = 256;

/**
 * Metadata in a request (to store, merge or filter by): a JSON object of at most
 * METADATA_MAX_KEYS keys of at most METADATA_MAX_KEY_LENGTH characters. Stored metadata is
 * indexed per top-level key, so its width is bounded where it comes in.
 */
export const MetadataSchema = JsonObjectSchema.superRefine((metadata, ctx) => {
  const keys = Object.keys(metadata);
  if (keys.length > METADATA_MAX_KEYS) {
    ctx.addIssue({
      code: "too_big",
      origin: "object",
      maximum: METADATA_MAX_KEYS,
      inclusive: true,
      input: metadata,
      message: `metadata must have at most ${METADATA_MAX_KEYS} keys`,
    });
  }
  for (const key of keys) {
    if (key.length <= METADATA_MAX_KEY_LENGTH) continue;
    ctx.addIssue({
      code: "too_big",
      origin: "string",
      maximum: METADATA_MAX_KEY_LENGTH,
      inclusive: true,
      input: key,
      path: [key],
      message: `metadata keys must be at most ${METADATA_MAX_KEY_LENGTH} characters long`,
    });
    break;
  }
});

/**
 * `patch` merged into stored metadata, as a PATCH does: 422 when the merge adds keys and leaves
 * more than METADATA_MAX_KEYS, so repeated PATCHes cannot widen metadata without bound (the
 * schema bounds each request only). Keys already stored may still change.
 */
export function mergeMetadata(stored: Record<string, unknown>, patch: Record<string, unknown>) {
  const merged = { ...stored, ...patch };
  const width = Object.keys(merged).length;
  if (width > METADATA_MAX_KEYS && width > Object.keys(stored).length) {
    throw unprocessable([
      {
        loc: ["body", "metadata"],
        msg: `metadata would have ${width} keys after the merge, more than ${METADATA_MAX_KEYS}`,
        type: "too_long",
      },
    ]);
  }
  return merged;
}

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
