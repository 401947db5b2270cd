import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashApiKey } from "@agentplane/common";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "./config.ts";

const keysFile = (text: string) => {
  const path = join(mkdtempSync(join(tmpdir(), "cp-keys-")), "api-keys.jsonl");
  writeFileSync(path, text);
  return path;
};
const grant = {
  hash: hashApiKey("k"),
  organization_id: "11111111-1111-4111-8111-111111111111",
  workspace_ids: ["22222222-2222-4222-8222-222222222222"],
};

describe("loadConfig", () => {
  it("reads namespaces, the key file and JWT settings from the environment", () => {
    const config = loadConfig({
      PORT: "0",
      CONTROL_PLANE_NAMESPACE_LAYOUT: "shared",
      CONTROL_PLANE_NAMESPACES: "agents, team-b",
      CONTROL_PLANE_API_KEYS_FILE: keysFile(`${JSON.stringify(grant)}\n`),
      CONTROL_PLANE_JWKS_URL: "https://idp.example/.well-known/jwks.json",
      CONTROL_PLANE_JWT_ISSUER: "https://idp.example/",
    });
    expect(config).toMatchObject({
      port: 0,
      layout: { kind: "shared", namespaces: ["agents", "team-b"] },
      providersNamespace: "agents",
      apiKeys: [grant],
      jwt: {
        jwksUrl: "https://idp.example/.well-known/jwks.json",
        issuer: "https://idp.example/",
        organizationClaim: "organization_id",
      },
    });
  });

  it("puts each workspace in its own namespace unless the shared layout is chosen", () => {
    expect(loadConfig({ CONTROL_PLANE_JWT_SECRET: "s" }).layout).toEqual({ kind: "workspace", prefix: "agentplane-" });
    expect(
      loadConfig({ CONTROL_PLANE_JWT_SECRET: "s", CONTROL_PLANE_TENANT_NAMESPACE_PREFIX: "agents-" }).layout,
    ).toEqual({ kind: "workspace", prefix: "agents-" });
    // Shared namespaces without the shared layout would silently move deployments after an upgrade.
    expect(() => loadConfig({ CONTROL_PLANE_JWT_SECRET: "s", CONTROL_PLANE_NAMESPACES: "agents" })).toThrow(
      /CONTROL_PLANE_NAMESPACE_LAYOUT=shared/,
    );
    for (const prefix of ["Agents-", "1a-", "a".repeat(28), "a_b"]) {
      expect(() =>
        loadConfig({ CONTROL_PLANE_JWT_SECRET: "s", CONTROL_PLANE_TENANT_NAMESPACE_PREFIX: prefix }),
      ).toThrow(/PREFIX/);
    }
    expect(() => loadConfig({ CONTROL_PLANE_JWT_SECRET: "s", CONTROL_PLANE_NAMESPACE_LAYOUT: "org" })).toThrow(
      /LAYOUT/,
    );
  });

  it("refuses to start without any way to authenticate, with bad namespaces or a bad key file", () => {
    const shared = { CONTROL_PLANE_NAMESPACE_LAYOUT: "shared" };
    expect(() => loadConfig({ ...shared, CONTROL_PLANE_NAMESPACES: "agents" })).toThrow(ConfigError);
    expect(() => loadConfig({ ...shared, CONTROL_PLANE_NAMESPACES: "Agents", CONTROL_PLANE_JWT_SECRET: "s" })).toThrow(
      /namespace/,
    );
    expect(() => loadConfig({ CONTROL_PLANE_API_KEYS_FILE: keysFile('{"hash":"plain"}') })).toThrow(/API_KEYS_FILE/);
    expect(() => loadConfig({ CONTROL_PLANE_API_KEYS_FILE: "/nonexistent/keys" })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: "http", CONTROL_PLANE_JWT_SECRET: "s" })).toThrow(/PORT/);
  });
});
