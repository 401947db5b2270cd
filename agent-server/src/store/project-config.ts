import { z } from "zod";
import { readProjectSection } from "../graphs/project.ts";
import type { StoreTtlConfig } from "./base.ts";

/** The `store` section of `langgraph.json`. */
const StoreSection = z.object({
  ttl: z
    .object({
      default_ttl: z.number().positive().nullish(),
      refresh_on_read: z.boolean().optional(),
      sweep_interval_minutes: z.number().positive().nullish(),
    })
    .optional(),
  /** Semantic search settings; accepted so projects written for other servers load (see `hasIndex`). */
  index: z.looseObject({}).optional(),
});

export interface StoreProjectConfig {
  ttl: StoreTtlConfig;
  /** `store.index` is set: its clients expect semantic search, which this server does not have. */
  hasIndex: boolean;
}

export function readStoreConfig(configPath: string): StoreProjectConfig {
  const { ttl, index } = readProjectSection(configPath, "store", StoreSection);
  return {
    ttl: {
      ...(ttl?.default_ttl != null && { defaultTtl: ttl.default_ttl }),
      ...(ttl?.refresh_on_read !== undefined && { refreshOnRead: ttl.refresh_on_read }),
      ...(ttl?.sweep_interval_minutes != null && { sweepIntervalMinutes: ttl.sweep_interval_minutes }),
    },
    hasIndex: index !== undefined,
  };
}
