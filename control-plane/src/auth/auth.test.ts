import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { hashApiKey } from "@agentplane/common";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createJwtVerifier, type JwtConfig } from "./jwt.ts";
import { grantHashesFor, parseApiKeyGrants } from "./principal.ts";

const org = "11111111-1111-4111-8111-111111111111";
const ws = "22222222-2222-4222-8222-222222222222";
type SigningKey = Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];
const claims = { organizationClaim: "organization_id", workspacesClaim: "workspace_ids" } satisfies Partial<JwtConfig>;

describe("API key grants", () => {
  const grant = { hash: hashApiKey("k1"), organization_id: org, workspace_ids: [ws] };

  it("reads JSON Lines with comments and blank lines, or a JSON array", () => {
    const lines = `# keys\n\n${JSON.stringify(grant)}\n${JSON.stringify({ ...grant, hash: hashApiKey("k2") })}\n`;
    expect(parseApiKeyGrants(lines)).toHaveLength(2);
    expect(parseApiKeyGrants(JSON.stringify([grant]))).toEqual([grant]);
  });

  it("normalises ids to lower case and refuses plain-text keys or non-UUID ids", () => {
    const upper = { ...grant, workspace_ids: [ws.toUpperCase()] };
    expect(parseApiKeyGrants(JSON.stringify(upper))[0]?.workspace_ids).toEqual([ws]);
    expect(() => parseApiKeyGrants(JSON.stringify({ ...grant, hash: "lsv2_pt_plain" }))).toThrow(/#1.*SHA-256/s);
    expect(() => parseApiKeyGrants(JSON.stringify({ ...grant, organization_id: "acme" }))).toThrow(/UUID/);
    expect(() => parseApiKeyGrants("{not json")).toThrow();
  });

  it("hands a workspace's agent servers the hashes of exactly the grants covering it", () => {
    const other = "33333333-3333-4333-8333-333333333333";
    const both = { ...grant, hash: hashApiKey("k2"), workspace_ids: [other, ws] };
    const elsewhere = { ...grant, hash: hashApiKey("k3"), workspace_ids: [other] };
    const unbound = { ...grant, hash: hashApiKey("k4"), workspace_ids: [] };
    const grants = [grant, both, elsewhere, unbound, grant];
    expect(grantHashesFor(grants, ws)).toEqual([grant.hash, both.hash].sort());
    expect(grantHashesFor(grants, other)).toEqual([both.hash, elsewhere.hash].sort());
    expect(grantHashesFor(grants, "44444444-4444-4444-8444-444444444444")).toEqual([]);
  });
});

describe("JWT verification", () => {
  let jwks: Server;
  let jwksUrl: string;
  let privateKey: SigningKey;

  beforeAll(async () => {
    const pair = await generateKeyPair("RS256");
    privateKey = pair.privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "RS256", use: "sig" };
    jwks = createServer((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, "127.0.0.1", resolve));
    jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`;
  });
  afterAll(() => new Promise<void>((resolve) => jwks.close(() => resolve())));

  const sign = (payload: Record<string, unknown>, key: SigningKey | Uint8Array, alg: string, expires = "5m") =>
    new SignJWT(payload)
      .setProtectedHeader({ alg, kid: "k1" })
      .setIssuedAt()
      .setExpirationTime(expires)
      .setIssuer("idp")
      .sign(key);

  it("accepts tokens signed by a JWKS key and reads organization and workspaces from the claims", async () => {
    const verify = createJwtVerifier({ ...claims, jwksUrl, issuer: "idp" });
    const token = await sign({ organization_id: org, workspace_ids: [ws] }, privateKey, "RS256");
    expect(await verify(token)).toEqual({ organizationId: org, workspaceIds: [ws] });
    const single = await sign({ organization_id: org, workspace_ids: ws }, privateKey, "RS256");
    expect(await verify(single)).toEqual({ organizationId: org, workspaceIds: [ws] });
  });

  it("accepts HS256 tokens with the shared secret and refuses everything else", async () => {
    const secret = new TextEncoder().encode("a-very-long-shared-secret-for-tests");
    const verify = createJwtVerifier({ ...claims, secret: "a-very-long-shared-secret-for-tests", issuer: "idp" });
    expect(await verify(await sign({ organization_id: org, workspace_ids: [ws] }, secret, "HS256"))).toBeDefined();
    const wrongSecret = new TextEncoder().encode("another-secret-of-sufficient-length!");
    expect(await verify(await sign({ organization_id: org }, wrongSecret, "HS256"))).toBeUndefined();
    expect(await verify(await sign({ organization_id: org }, secret, "HS256", "-1m"))).toBeUndefined();
    expect(await verify(await sign({ workspace_ids: [ws] }, secret, "HS256"))).toBeUndefined();
    expect(await verify(await sign({ organization_id: "acme" }, secret, "HS256"))).toBeUndefined();
    expect(await verify("not.a.jwt")).toBeUndefined();
    const wrongIssuer = await new SignJWT({ organization_id: org })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer("x")
      .sign(secret);
    expect(await verify(wrongIssuer)).toBeUndefined();
  });
});
