import { type AnyRoute, defineRoute } from "@agentplane/common";
import { callerOf } from "../auth/middleware.ts";
import { requireTenant } from "../auth/principal.ts";
import {
  Listener,
  ListenerCreateRequest,
  ListenerListQuery,
  ListenerPatchRequest,
  ListenerPath,
  ListenersList,
} from "./schemas.ts";
import type { ListenerService } from "./service.ts";

const tag = "Listeners (v2)";

/** Listeners are workspace-scoped: every operation runs in the caller's workspace (X-Tenant-Id). */
export function listenerRoutes(listeners: ListenerService): AnyRoute[] {
  return [
    defineRoute({
      method: "get",
      path: "/v2/listeners",
      operationId: "list_listeners_v2_listeners_get",
      tag,
      summary: "List Listeners",
      query: ListenerListQuery,
      response: ListenersList,
      handler: async ({ query, res }) => {
        const all = await listeners.list(requireTenant(callerOf(res)));
        const resources = all.slice(query.offset, query.offset + query.limit);
        return { resources, offset: query.offset + resources.length };
      },
    }),
    defineRoute({
      method: "post",
      path: "/v2/listeners",
      operationId: "create_listener_v2_listeners_post",
      tag,
      summary: "Create Listener",
      body: ListenerCreateRequest,
      response: Listener,
      status: 201,
      errors: [403, 409],
      handler: ({ body, res }) => listeners.create(requireTenant(callerOf(res)), body),
    }),
    defineRoute({
      method: "get",
      path: "/v2/listeners/:listener_id",
      operationId: "get_listener_v2_listeners__listener_id__get",
      tag,
      summary: "Get Listener",
      params: ListenerPath,
      response: Listener,
      errors: [403, 404],
      handler: ({ params, res }) => listeners.get(requireTenant(callerOf(res)), params.listener_id),
    }),
    defineRoute({
      method: "patch",
      path: "/v2/listeners/:listener_id",
      operationId: "patch_listener_v2_listeners__listener_id__patch",
      tag,
      summary: "Patch Listener",
      params: ListenerPath,
      body: ListenerPatchRequest,
      response: Listener,
      errors: [400, 403, 404],
      handler: ({ params, body, res }) => listeners.patch(requireTenant(callerOf(res)), params.listener_id, body),
    }),
    defineRoute({
      method: "delete",
      path: "/v2/listeners/:listener_id",
      operationId: "delete_listener_v2_listeners__listener_id__delete",
      tag,
      summary: "Delete Listener",
      params: ListenerPath,
      response: null,
      status: 204,
      errors: [400, 403, 404],
      handler: ({ params, res }) => listeners.delete(requireTenant(callerOf(res)), params.listener_id),
    }),
  ];
}
