import { type ApiKeyVerifier, forbidden, HttpError, unauthorized } from "@agentplane/common";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { JwtVerifier } from "./jwt.ts";
import { type Caller, isUuid, type Principal } from "./principal.ts";

export interface Authenticators {
  apiKeys: ApiKeyVerifier<Principal>;
  jwt: JwtVerifier | undefined;
}

async function principalOf(req: Request, { apiKeys, jwt }: Authenticators): Promise<Principal> {
  const apiKey = req.get("x-api-key");
  if (apiKey !== undefined) {
    const principal = apiKeys.verify(apiKey);
    if (!principal) throw unauthorized("Invalid API key.");
    return principal;
  }
  const authorization = req.get("authorization");
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    const principal = match?.[1] && jwt ? await jwt(match[1]) : undefined;
    if (!principal) throw unauthorized("Invalid bearer token.");
    return principal;
  }
  throw unauthorized("Missing credentials: send X-Api-Key or Authorization: Bearer <token>.");
}

/** The workspace the request targets: `X-Tenant-Id`, or the credential's only workspace. */
function tenantOf(req: Request, principal: Principal): string | undefined {
  const header = req.get("x-tenant-id");
  if (header === undefined) return principal.workspaceIds.length === 1 ? principal.workspaceIds[0] : undefined;
  if (!isUuid(header.trim())) {
    throw new HttpError(422, [
      { loc: ["header", "x-tenant-id"], msg: "Input should be a valid UUID", type: "uuid_parsing" },
    ]);
  }
  const tenantId = header.trim().toLowerCase();
  if (!principal.workspaceIds.includes(tenantId))
    throw forbidden(`Workspace '${tenantId}' is not accessible with these credentials.`);
  return tenantId;
}

/** Rejects unauthenticated requests (401) and workspaces the credential may not use (403). */
export function authenticate(authenticators: Authenticators): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      const principal = await principalOf(req, authenticators);
      const caller: Caller = { ...principal, tenantId: tenantOf(req, principal) };
      res.locals.caller = caller;
      next();
    } catch (error) {
      next(error);
    }
  };
}

export function callerOf(res: Response): Caller {
  return res.locals.caller as Caller;
}
