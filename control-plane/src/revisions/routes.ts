import { type AnyRoute, defineRoute } from "@agentplane/common";
import { callerOf } from "../auth/middleware.ts";
import { requireTenant } from "../auth/principal.ts";
import { Deployment, DeploymentPath, RevisionCreateRequest } from "../deployments/schemas.ts";
import type { DeploymentService } from "../deployments/service.ts";
import { toRevisionResponse } from "./mapping.ts";
import { Revision, RevisionListQuery, RevisionPath, RevisionsList } from "./schemas.ts";

const tag = "Deployments (v2)";

export function revisionRoutes(service: DeploymentService): AnyRoute[] {
  return [
    defineRoute({
      method: "get",
      path: "/v2/deployments/:deployment_id/revisions",
      operationId: "list_revisions_v2_deployments__deployment_id__revisions_get",
      tag,
      summary: "List Revisions",
      params: DeploymentPath,
      query: RevisionListQuery,
      response: RevisionsList,
      errors: [404],
      handler: async ({ params, query, res }) => {
        // Every revision here is rolled out by the operator next to the control plane, none by a remote listener.
        if (query.remote_reconciled === true) {
          await service.require(requireTenant(callerOf(res)), params.deployment_id);
          return { resources: [], offset: query.offset };
        }
        const revisions = await service.listRevisions(
          requireTenant(callerOf(res)),
          params.deployment_id,
          query.status ?? undefined,
        );
        const resources = revisions.slice(query.offset, query.offset + query.limit).map(toRevisionResponse);
        return { resources, offset: query.offset + resources.length };
      },
    }),
    defineRoute({
      method: "post",
      path: "/v2/deployments/:deployment_id/revisions",
      operationId: "create_revision_v2_deployments__deployment_id__revisions_post",
      tag,
      summary: "Create Revision",
      params: DeploymentPath,
      body: RevisionCreateRequest,
      response: Revision,
      status: 201,
      errors: [400, 404],
      handler: ({ params, body, res }) =>
        service.createRevision(requireTenant(callerOf(res)), params.deployment_id, body),
    }),
    defineRoute({
      method: "get",
      path: "/v2/deployments/:deployment_id/revisions/:revision_id",
      operationId: "get_revision_v2_deployments__deployment_id__revisions__revision_id__get",
      tag,
      summary: "Get Revision",
      params: RevisionPath,
      response: Revision,
      errors: [404],
      handler: ({ params, res }) =>
        service.getRevision(requireTenant(callerOf(res)), params.deployment_id, params.revision_id),
    }),
    defineRoute({
      method: "post",
      path: "/v2/deployments/:deployment_id/revisions/:revision_id/redeploy",
      operationId: "redeploy_revision_v2_deployments__deployment_id__revisions__revision_id__redeploy_post",
      tag,
      summary: "Redeploy Revision",
      params: RevisionPath,
      response: Deployment,
      errors: [400, 404],
      handler: ({ params, res }) =>
        service.redeploy(requireTenant(callerOf(res)), params.deployment_id, params.revision_id),
    }),
  ];
}
