import { forbidden } from "@agentplane/common";
import { z } from "zod";

/** Who a credential speaks for: one organization and the workspaces (tenants) it may use. */
export interface Principal {
  organizationId: string;
  workspaceIds: readonly string[];
}

/** An authenticated request: the principal plus the workspace it selected (if it could). */
export interface Caller extends Principal {
  tenantId: string | undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: unknown): value is string => typeof value === "string" && UUID.test(value);

const uuidString = z
  .string()
  .regex(UUID, "must be a UUID")
  .transform((id) => id.toLowerCase());

/** One line of the API-key file: only the SHA-256 of the key is ever stored. */
export const ApiKeyGrant = z.object({
  hash: z.string().regex(/^[0-9a-f]{64}$/, "must be the lowercase hex SHA-256 of the key"),
  organization_id: uuidString,
  workspace_ids: z.array(uuidString),
});
export type ApiKeyGrant = z.infer<typeof ApiKeyGrant>;

/** The hashes of every grant that may use `workspaceId`, the keys its agent servers accept too. */
export function grantHashesFor(grants: readonly ApiKeyGrant[], workspaceId: string): string[] {
  const hashes = grants.filter((grant) => grant.workspace_ids.includes(workspaceId)).map((grant) => grant.hash);
  return [...new Set(hashes)].sort();
}

/**
 * Parses the API-key file: JSON Lines (one grant per line; blank lines and `#` comments ignored) or
 * a single JSON array of grants.
 */
export function parseApiKeyGrants(text: string): ApiKeyGrant[] {
  const trimmed = text.trim();
  const raw: unknown[] = trimmed.startsWith("[")
    ? (JSON.parse(trimmed) as unknown[])
    : trimmed
        .split("\n")
        .map((line) => line.trim())
        .filter((line) => line && !line.startsWith("#"))
        .map((line) => JSON.parse(line) as unknown);
  return raw.map((entry, index) => {
    const result = ApiKeyGrant.safeParse(entry);
    if (!result.success) throw new Error(`API key grant #${index + 1}: ${z.prettifyError(result.error)}`);
    return result.data;
  });
}

/** The workspace a tenant-scoped operation runs in; 403 when the credential spans several and none was chosen. */
export function requireTenant(caller: Caller): string {
  if (caller.tenantId) return caller.tenantId;
  throw forbidden(
    caller.workspaceIds.length === 0
      ? "This credential is not bound to any workspace."
      : "This credential requires workspace specification: send the X-Tenant-Id header.",
  );
}
