import { createRemoteJWKSet, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from "jose";
import { isUuid, type Principal } from "./principal.ts";

export interface JwtConfig {
  /** HMAC shared secret (HS256/384/512). */
  secret?: string;
  /** JWKS endpoint for asymmetric keys (RS*, ES*, PS*, EdDSA). */
  jwksUrl?: string;
  issuer?: string;
  audience?: string;
  /** Claim naming the organization (default `organization_id`). */
  organizationClaim: string;
  /** Claim naming the workspaces: a string or an array of strings (default `workspace_ids`). */
  workspacesClaim: string;
}

function principalOf(payload: JWTPayload, config: JwtConfig): Principal | undefined {
  const organizationId = payload[config.organizationClaim];
  const workspaces = payload[config.workspacesClaim];
  const workspaceIds = typeof workspaces === "string" ? [workspaces] : Array.isArray(workspaces) ? workspaces : [];
  if (!isUuid(organizationId)) return undefined;
  if (!workspaceIds.every(isUuid)) return undefined;
  return { organizationId: organizationId.toLowerCase(), workspaceIds: workspaceIds.map((id) => id.toLowerCase()) };
}

/** Verifies a bearer token's signature, expiry, issuer and audience; `undefined` for any invalid token. */
export type JwtVerifier = (token: string) => Promise<Principal | undefined>;

export function createJwtVerifier(config: JwtConfig): JwtVerifier {
  const options = { issuer: config.issuer, audience: config.audience };
  const verifyWith = (key: Uint8Array | JWTVerifyGetKey) => async (token: string) => {
    try {
      const { payload } =
        key instanceof Uint8Array
          ? await jwtVerify(token, key, { ...options, algorithms: ["HS256", "HS384", "HS512"] })
          : await jwtVerify(token, key, options);
      return principalOf(payload, config);
    } catch {
      return undefined;
    }
  };
  const verifiers: JwtVerifier[] = [];
  if (config.secret) verifiers.push(verifyWith(new TextEncoder().encode(config.secret)));
  if (config.jwksUrl) verifiers.push(verifyWith(createRemoteJWKSet(new URL(config.jwksUrl))));
  return async (token) => {
    for (const verify of verifiers) {
      const principal = await verify(token);
      if (principal) return principal;
    }
    return undefined;
  };
}
