import { z } from "zod";
import { apiSchemas } from "../schemas/registry.ts";

export const LOG_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LogLevel = z.enum(LOG_LEVELS).register(apiSchemas, { id: "LogLevel" });

/** One line an agent-server pod wrote (or, first, why its revision failed). */
export const LogEntry = z
  .object({
    id: z.string(),
    timestamp: z.iso.datetime(),
    level: LogLevel,
    message: z.string(),
    /** The pod that wrote it; null for the revision's failure reason, which the operator recorded. */
    pod_name: z.string().nullable(),
    revision_id: z.string().nullable(),
    /** The run the line belongs to, when the agent server logged one (`run_id` in a JSON line). */
    run_id: z.string().nullable(),
  })
  .register(apiSchemas, { id: "LogEntry" });
export type LogEntry = z.infer<typeof LogEntry>;

export const LogsResponse = z
  .object({ logs: z.array(LogEntry), next_offset: z.string().nullable() })
  .register(apiSchemas, { id: "LogsResponse" });

export const DeploymentLogsList = z
  .object({ items: z.array(LogEntry), next_cursor: z.string().nullable() })
  .register(apiSchemas, { id: "DeploymentLogsList" });

const filters = {
  start_time: z.iso.datetime({ offset: true }).nullish(),
  end_time: z.iso.datetime({ offset: true }).nullish(),
  query: z.string().max(1000).nullish(),
  level: LogLevel.nullish(),
  run_id: z.string().max(256).nullish(),
};

export const RevisionLogsQuery = z.object({
  ...filters,
  type: z.enum(["build", "deploy"]),
  order: z.enum(["asc", "desc"]).default("asc"),
  limit: z.coerce.number().int().min(1).max(1000).default(50),
  offset: z.string().max(1000).nullish(),
});
export type RevisionLogsQuery = z.infer<typeof RevisionLogsQuery>;

export const DeploymentLogsQuery = z.object({
  ...filters,
  deployment_id: z.uuid(),
  revision_id: z.uuid().nullish(),
  log_type: z.enum(["BUILD", "DEPLOY"]).default("DEPLOY"),
  sort_order: z.enum(["asc", "desc"]).default("asc"),
  page_size: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(1000).nullish(),
});
export type DeploymentLogsQuery = z.infer<typeof DeploymentLogsQuery>;
