import { deploymentBody } from "../../testing/harness.ts";
import { kubernetesRefusals, withResources } from "./bad-input-kubernetes-table.ts";

/**
 * The table of ../bad-input.integration.test.ts: malformed bodies, paths and headers sent to the
 * control plane, each with the 4xx it must get. A path starting `dep` means the test's existing
 * deployment.
 */

export interface Case {
  name: string;
  method?: string;
  path?: string;
  body?: unknown;
  raw?: string;
  headers?: Record<string, string>;
  status: number;
  /** The first validation error's location, for 422s. */
  loc?: (string | number)[];
}

const valid = deploymentBody("new-one");
const providerBody = {
  provider_id: "p2",
  name: "P2",
  client_id: "c",
  auth_url: "https://a.example/a",
  token_url: "https://a.example/t",
};
export const cases: Case[] = [
  // create: malformed documents
  { name: "invalid JSON", raw: '{"name": ', status: 422, loc: ["body"] },
  { name: "JSON array instead of object", body: [], status: 422 },
  {
    name: "form-encoded body",
    raw: "name=x",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    status: 415,
  },
  { name: "body over 1 MiB", body: { ...valid, name: "x".repeat(1_100_000) }, status: 413 },
  // create: fields
  { name: "missing name", body: { ...valid, name: undefined }, status: 422, loc: ["body", "name"] },
  { name: "empty name", body: { ...valid, name: "  " }, status: 422, loc: ["body", "name"] },
  { name: "name of wrong type", body: { ...valid, name: 42 }, status: 422, loc: ["body", "name"] },
  { name: "missing source", body: { ...valid, source: undefined }, status: 422, loc: ["body", "source"] },
  { name: "unknown source", body: { ...valid, source: "ftp" }, status: 422, loc: ["body", "source"] },
  { name: "source this control plane cannot build", body: { ...valid, source: "github" }, status: 400 },
  {
    name: "missing source_config",
    body: { ...valid, source_config: undefined },
    status: 422,
    loc: ["body", "source_config"],
  },
  { name: "null source_config", body: { ...valid, source_config: null }, status: 422, loc: ["body", "source_config"] },
  {
    name: "missing source_revision_config",
    body: { ...valid, source_revision_config: undefined },
    status: 422,
    loc: ["body", "source_revision_config"],
  },
  {
    name: "missing image_uri",
    body: { ...valid, source_revision_config: {} },
    status: 422,
    loc: ["body", "source_revision_config", "image_uri"],
  },
  {
    name: "image_uri with whitespace",
    body: { ...valid, source_revision_config: { image_uri: "bad image" } },
    status: 422,
    loc: ["body", "source_revision_config", "image_uri"],
  },
  { name: "missing secrets", body: { ...valid, secrets: undefined }, status: 422, loc: ["body", "secrets"] },
  { name: "secrets not a list", body: { ...valid, secrets: { A: "b" } }, status: 422, loc: ["body", "secrets"] },
  {
    name: "secret without value",
    body: { ...valid, secrets: [{ name: "A" }] },
    status: 422,
    loc: ["body", "secrets", 0, "value"],
  },
  {
    name: "secret name not an env var",
    body: { ...valid, secrets: [{ name: "1-BAD", value: "v" }] },
    status: 422,
    loc: ["body", "secrets", 0, "name"],
  },
  {
    name: "reserved secret name",
    body: { ...valid, secrets: [{ name: "POSTGRES_URI", value: "v" }] },
    status: 422,
    loc: ["body", "secrets", 0, "name"],
  },
  {
    name: "duplicate secret names",
    body: {
      ...valid,
      secrets: [
        { name: "A", value: "1" },
        { name: "A", value: "2" },
      ],
    },
    status: 422,
    loc: ["body", "secrets"],
  },
  {
    name: "secret reference without key",
    body: { ...valid, secret_references: [{ name: "A", secret_name: "s" }] },
    status: 422,
    loc: ["body", "secret_references", 0, "secret_key"],
  },
  {
    name: "cpu below 0.1",
    body: withResources({ cpu: 0 }),
    status: 422,
    loc: ["body", "source_config", "resource_spec", "cpu"],
  },
  {
    name: "cpu above 8",
    body: withResources({ cpu: 100 }),
    status: 422,
    loc: ["body", "source_config", "resource_spec", "cpu"],
  },
  {
    name: "min_scale above max_scale",
    body: withResources({ min_scale: 5, max_scale: 2 }),
    status: 422,
    loc: ["body", "source_config", "resource_spec", "min_scale"],
  },
  // What Kubernetes itself would refuse (or never act on), caught at the API instead (issue #20).
  ...kubernetesRefusals,
  { name: "duplicate name", body: deploymentBody("existing"), status: 409 },
  // headers
  { name: "no credentials", body: valid, headers: { "x-api-key": "" }, status: 401 },
  { name: "unknown API key", body: valid, headers: { "x-api-key": "nope" }, status: 401 },
  {
    name: "malformed bearer token",
    body: valid,
    headers: { "x-api-key": undefined as never, authorization: "Bearer x.y.z" },
    status: 401,
  },
  {
    name: "malformed X-Tenant-Id",
    body: valid,
    headers: { "x-tenant-id": "tenant-1" },
    status: 422,
    loc: ["header", "x-tenant-id"],
  },
  {
    name: "foreign X-Tenant-Id",
    body: valid,
    headers: { "x-tenant-id": "00000000-0000-4000-8000-000000000000" },
    status: 403,
  },
  // list and path parameters
  { name: "limit 0", method: "GET", path: "/v2/deployments?limit=0", status: 422, loc: ["query", "limit"] },
  { name: "limit 101", method: "GET", path: "/v2/deployments?limit=101", status: 422, loc: ["query", "limit"] },
  {
    name: "limit not a number",
    method: "GET",
    path: "/v2/deployments?limit=ten",
    status: 422,
    loc: ["query", "limit"],
  },
  { name: "negative offset", method: "GET", path: "/v2/deployments?offset=-1", status: 422, loc: ["query", "offset"] },
  {
    name: "unknown deployment status",
    method: "GET",
    path: "/v2/deployments?status=RUNNING",
    status: 422,
    loc: ["query", "status"],
  },
  {
    name: "deployment id not a UUID",
    method: "GET",
    path: "/v2/deployments/abc",
    status: 422,
    loc: ["path", "deployment_id"],
  },
  {
    name: "unknown deployment",
    method: "GET",
    path: "/v2/deployments/00000000-0000-4000-8000-000000000000",
    status: 404,
  },
  {
    name: "unknown revision status",
    method: "GET",
    path: `/v2/deployments/00000000-0000-4000-8000-000000000000/revisions?status=DEPLOYED,NOPE`,
    status: 422,
  },
  // patch, revisions, delete
  { name: "patch renames", method: "PATCH", path: "dep", body: { name: "renamed" }, status: 400 },
  {
    name: "patch secrets not a list",
    method: "PATCH",
    path: "dep",
    body: { secrets: "A=b" },
    status: 422,
    loc: ["body", "secrets"],
  },
  {
    name: "patch empty image_uri",
    method: "PATCH",
    path: "dep",
    body: { source_revision_config: { image_uri: "" } },
    status: 422,
  },
  {
    name: "patch unknown revision_source",
    method: "PATCH",
    path: "dep",
    body: { revision_source: "ftp" },
    status: 422,
    loc: ["body", "revision_source"],
  },
  {
    name: "patch unknown deployment",
    method: "PATCH",
    path: "/v2/deployments/00000000-0000-4000-8000-000000000000",
    body: {},
    status: 404,
  },
  {
    name: "new revision with bad resources",
    method: "POST",
    path: "dep/revisions",
    body: { source_config: { resource_spec: { max_scale: 0 } } },
    status: 422,
  },
  {
    name: "redeploy unknown revision",
    method: "POST",
    path: "dep/revisions/00000000-0000-4000-8000-000000000000/redeploy",
    status: 404,
  },
  {
    name: "delete with non-boolean force",
    method: "DELETE",
    path: "dep?force=maybe",
    status: 422,
    loc: ["query", "force"],
  },
  { name: "force delete before soft delete", method: "DELETE", path: "dep?force=true", status: 400 },
  // OAuth providers
  {
    name: "provider without provider_id",
    method: "POST",
    path: "/v2/auth/providers",
    body: { ...providerBody, provider_id: undefined },
    status: 422,
    loc: ["body", "provider_id"],
  },
  {
    name: "provider with unknown provider_type",
    method: "POST",
    path: "/v2/auth/providers",
    body: { ...providerBody, provider_type: "github" },
    status: 422,
    loc: ["body", "provider_type"],
  },
  {
    name: "provider with unknown auth method",
    method: "POST",
    path: "/v2/auth/providers",
    body: { ...providerBody, token_endpoint_auth_method: "private_key_jwt" },
    status: 422,
  },
  {
    name: "provider auth_url not a URL",
    method: "POST",
    path: "/v2/auth/providers",
    body: { ...providerBody, auth_url: "javascript:alert(1)" },
    status: 422,
    loc: ["body", "auth_url"],
  },
  {
    name: "provider uses_pkce not boolean",
    method: "POST",
    path: "/v2/auth/providers",
    body: { ...providerBody, uses_pkce: "yes" },
    status: 422,
    loc: ["body", "uses_pkce"],
  },
  {
    name: "duplicate provider_id",
    method: "POST",
    path: "/v2/auth/providers",
    body: { ...providerBody, provider_id: "p1" },
    status: 409,
  },
  {
    name: "patch unknown provider",
    method: "PATCH",
    path: "/v2/auth/providers/nope",
    body: { name: "x" },
    status: 404,
  },
  {
    name: "patch provider with bad token_url",
    method: "PATCH",
    path: "/v2/auth/providers/p1",
    body: { token_url: 5 },
    status: 422,
    loc: ["body", "token_url"],
  },
];
