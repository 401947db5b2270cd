import { z } from "zod";
import { apiSchemas } from "../schemas/registry.ts";

export const ProviderType = z
  .enum(["microsoft", "salesforce", "slack", "x"])
  .register(apiSchemas, { id: "ProviderType" });
export const TokenEndpointAuthMethod = z
  .enum(["none", "client_secret_basic", "client_secret_post"])
  .register(apiSchemas, { id: "TokenEndpointAuthMethod" });

const httpUrl = z.url({ protocol: /^https?$/ }).max(2048);
const text = z.string().trim().min(1).max(1024);

export const OAuthProviderCreateRequest = z
  .object({
    provider_id: z
      .string()
      .min(1)
      .max(128)
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
        "must start with a letter or digit and hold only letters, digits, '.', '_' and '-'",
      ),
    name: text,
    client_id: text,
    client_secret: z.string().min(1).max(4096).nullish(),
    auth_url: httpUrl,
    token_url: httpUrl,
    uses_pkce: z.boolean().default(false),
    code_challenge_method: z.string().max(32).nullable().default("S256"),
    provider_type: ProviderType.nullish(),
    token_endpoint_auth_method: TokenEndpointAuthMethod.default("client_secret_post"),
    authorization_params: z.record(z.string(), z.string()).nullish(),
    allowed_redirect_uris: z.array(httpUrl).max(100).nullish(),
  })
  .register(apiSchemas, { id: "OAuthProviderCreateRequest" });
export type OAuthProviderCreateRequest = z.infer<typeof OAuthProviderCreateRequest>;

export const OAuthProviderUpdateRequest = z
  .object({
    name: text.nullish(),
    client_id: text.nullish(),
    client_secret: z.string().min(1).max(4096).nullish(),
    auth_url: httpUrl.nullish(),
    token_url: httpUrl.nullish(),
    uses_pkce: z.boolean().nullish(),
    code_challenge_method: z.string().max(32).nullish(),
  })
  .register(apiSchemas, { id: "OAuthProviderUpdateRequest" });
export type OAuthProviderUpdateRequest = z.infer<typeof OAuthProviderUpdateRequest>;

/** What the API returns and what is stored in the provider's ConfigMap: never the client secret. */
export const OAuthProviderResponse = z
  .object({
    id: z.string(),
    organization_id: z.string(),
    provider_id: z.string(),
    name: z.string(),
    client_id: z.string(),
    auth_url: z.string(),
    token_url: z.string(),
    uses_pkce: z.boolean(),
    code_challenge_method: z.string().nullable(),
    provider_type: ProviderType.nullable(),
    mcp_server_url: z.string().nullable(),
    token_endpoint_auth_method: TokenEndpointAuthMethod,
    is_dynamic_client: z.boolean(),
    authorization_params: z.record(z.string(), z.string()).nullable(),
    allowed_redirect_uris: z.array(z.string()).nullable(),
    default_redirect_uri: z.string().nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .register(apiSchemas, { id: "OAuthProviderResponse" });
export type OAuthProviderResponse = z.infer<typeof OAuthProviderResponse>;

export const ProviderPath = z.object({ provider_id: z.string().min(1).max(128) });
