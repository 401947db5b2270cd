import { type AnyRoute, defineRoute } from "@agentplane/common";
import { callerOf } from "../auth/middleware.ts";
import { requireTenant } from "../auth/principal.ts";
import {
  BulkDeleteQuery,
  BulkDeleteResponse,
  DeleteDeploymentQuery,
  Deployment,
  DeploymentCreateRequest,
  DeploymentListQuery,
  DeploymentPatchRequest,
  DeploymentPath,
  DeploymentsList,
} from "./schemas.ts";
import type { DeploymentService } from "./service.ts";

const tag = "Deployments (v2)";

export function deploymentRoutes(service: DeploymentService): AnyRoute[] {
  return [
    defineRoute({
      method: "get",
      path: "/v2/deployments",
      operationId: "list_deployments_v2_deployments_get",
      tag,
      summary: "List Deployments",
      query: DeploymentListQuery,
      response: DeploymentsList,
      handler: ({ query, res }) => service.list(requireTenant(callerOf(res)), query),
    }),
    defineRoute({
      method: "post",
      path: "/v2/deployments",
      operationId: "create_deployment_v2_deployments_post",
      tag,
      summary: "Create Deployment",
      body: DeploymentCreateRequest,
      response: Deployment,
      status: 201,
      errors: [400, 409],
      handler: ({ body, res }) => service.create(requireTenant(callerOf(res)), body),
    }),
    defineRoute({
      method: "delete",
      path: "/v2/deployments",
      operationId: "delete_deployments_v2_deployments_delete",
      tag,
      summary: "Delete Deployments",
      query: BulkDeleteQuery,
      response: BulkDeleteResponse,
      alsoStatus: [207],
      errors: [404],
      handler: async ({ query, res }) => {
        const { status, body } = await service.deleteMany(requireTenant(callerOf(res)), query.deployment_ids);
        // 200, or 207 when some failed (listed in `failed`): the status is the handler's.
        res.status(status).json(body);
      },
    }),
    defineRoute({
      method: "get",
      path: "/v2/deployments/:deployment_id",
      operationId: "get_deployment_v2_deployments__deployment_id__get",
      tag,
      summary: "Get Deployment",
      params: DeploymentPath,
      response: Deployment,
      errors: [404],
      handler: ({ params, res }) => service.get(requireTenant(callerOf(res)), params.deployment_id),
    }),
    defineRoute({
      method: "patch",
      path: "/v2/deployments/:deployment_id",
      operationId: "patch_deployment_v2_deployments__deployment_id__patch",
      tag,
      summary: "Patch Deployment",
      params: DeploymentPath,
      body: DeploymentPatchRequest,
      response: Deployment,
      errors: [400, 404],
      handler: ({ params, body, res }) => service.patch(requireTenant(callerOf(res)), params.deployment_id, body),
    }),
    defineRoute({
      method: "delete",
      path: "/v2/deployments/:deployment_id",
      operationId: "delete_deployment_v2_deployments__deployment_id__delete",
      tag,
      summary: "Delete Deployment",
      params: DeploymentPath,
      query: DeleteDeploymentQuery,
      response: null,
      status: 204,
      errors: [400, 404],
      handler: ({ params, query, res }) =>
        service.delete(requireTenant(callerOf(res)), params.deployment_id, query.force),
    }),
  ];
}
