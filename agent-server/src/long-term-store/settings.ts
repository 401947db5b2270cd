import { z } from "zod";
import { ConfigError } from "../config.ts";

export interface StoreApiSettings {
  /** Largest accepted item value, serialised as JSON (STORE_MAX_VALUE_BYTES, default 1 MiB). */
  maxValueBytes: number;
}

const Settings = z.object({
  maxValueBytes: z.coerce
    .number({ error: "STORE_MAX_VALUE_BYTES must be a number" })
    .int("STORE_MAX_VALUE_BYTES must be an integer")
    .min(1, "STORE_MAX_VALUE_BYTES must be at least 1"),
});

/** Throws ConfigError (the CLI exits with code 2) for invalid values. */
export function storeApiSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): StoreApiSettings {
  const parsed = Settings.safeParse({ maxValueBytes: env.STORE_MAX_VALUE_BYTES ?? 1024 * 1024 });
  if (!parsed.success) throw new ConfigError(parsed.error.issues[0]?.message ?? "invalid store settings");
  return parsed.data;
}
