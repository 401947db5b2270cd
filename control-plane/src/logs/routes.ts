import { type AnyRoute, defineRoute } from "@agentplane/common";
import { callerOf } from "../auth/middleware.ts";
import { requireTenant } from "../auth/principal.ts";
import { RevisionPath } from "../revisions/schemas.ts";
import { DeploymentLogsList, DeploymentLogsQuery, LogsResponse, RevisionLogsQuery } from "./schemas.ts";
import type { LogService } from "./service.ts";

const tag = "Deployments (v2)";

export function logRoutes(logs: LogService): AnyRoute[] {
  return [
    defineRoute({
      method: "get",
      path: "/v2/deployments/:deployment_id/revisions/:revision_id/logs",
      operationId: "list_revision_logs_v2_deployments__deployment_id__revisions__revision_id__logs_get",
      tag,
      summary: "List Revision Logs",
      params: RevisionPath,
      query: RevisionLogsQuery,
      response: LogsResponse,
      errors: [404],
      handler: ({ params, query, res }) =>
        logs.revisionLogs(requireTenant(callerOf(res)), params.deployment_id, params.revision_id, query),
    }),
    defineRoute({
      method: "get",
      path: "/v2/deployment-logs",
      operationId: "list_deployment_log_entries_v2_deployment_logs_get",
      tag,
      summary: "List Deployment Log Entries",
      query: DeploymentLogsQuery,
      response: DeploymentLogsList,
      errors: [404],
      handler: ({ query, res }) => logs.deploymentLogs(requireTenant(callerOf(res)), query),
    }),
  ];
}
