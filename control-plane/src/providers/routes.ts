import { type AnyRoute, defineRoute } from "@agentplane/common";
import { z } from "zod";
import { callerOf } from "../auth/middleware.ts";
import {
  OAuthProviderCreateRequest,
  OAuthProviderResponse,
  OAuthProviderUpdateRequest,
  ProviderPath,
} from "./schemas.ts";
import type { ProviderStore } from "./store.ts";

const tag = "Auth Service (v2)";

export function providerRoutes(store: ProviderStore): AnyRoute[] {
  return [
    defineRoute({
      method: "get",
      path: "/v2/auth/providers",
      operationId: "list_oauth_providers_v2_auth_providers_get",
      tag,
      summary: "List OAuth Providers",
      response: z.array(OAuthProviderResponse),
      handler: ({ res }) => store.list(callerOf(res).organizationId),
    }),
    defineRoute({
      method: "post",
      path: "/v2/auth/providers",
      operationId: "create_oauth_provider_v2_auth_providers_post",
      tag,
      summary: "Create OAuth Provider",
      body: OAuthProviderCreateRequest,
      response: OAuthProviderResponse,
      errors: [409],
      handler: ({ body, res }) => store.create(callerOf(res).organizationId, body),
    }),
    defineRoute({
      method: "get",
      path: "/v2/auth/providers/:provider_id",
      operationId: "get_oauth_provider_v2_auth_providers__provider_id__get",
      tag,
      summary: "Get OAuth Provider",
      params: ProviderPath,
      response: OAuthProviderResponse,
      errors: [404],
      handler: ({ params, res }) => store.get(callerOf(res).organizationId, params.provider_id),
    }),
    defineRoute({
      method: "patch",
      path: "/v2/auth/providers/:provider_id",
      operationId: "update_oauth_provider_v2_auth_providers__provider_id__patch",
      tag,
      summary: "Update OAuth Provider",
      params: ProviderPath,
      body: OAuthProviderUpdateRequest,
      response: OAuthProviderResponse,
      errors: [404],
      handler: ({ params, body, res }) => store.update(callerOf(res).organizationId, params.provider_id, body),
    }),
    defineRoute({
      method: "delete",
      path: "/v2/auth/providers/:provider_id",
      operationId: "delete_oauth_provider_v2_auth_providers__provider_id__delete",
      tag,
      summary: "Delete OAuth Provider",
      params: ProviderPath,
      response: z.object({}),
      errors: [404],
      handler: async ({ params, res }) => {
        await store.delete(callerOf(res).organizationId, params.provider_id);
        return {};
      },
    }),
  ];
}
