import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isProjectAuth } from "./authorize.ts";
import { readAuthSettings } from "./config.ts";
import { loadProjectAuth } from "./module.ts";

const fixture = new URL("./testing/project/", import.meta.url).pathname;

/** A langgraph.json with this `auth` section, in a fresh directory. */
function project(auth: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), "custom-auth-"));
  const path = join(dir, "langgraph.json");
  writeFileSync(path, JSON.stringify({ graphs: {}, auth }));
  return path;
}

describe("auth.path", () => {
  it("names a module and an export, the default export when none is given", () => {
    const configPath = project({ path: "./src/auth.ts:auth", disable_studio_auth: true, authenticate_docs: true });
    expect(readAuthSettings(configPath)).toEqual({
      location: { spec: "./src/auth.ts:auth", modulePath: join(configPath, "../src/auth.ts"), exportName: "auth" },
      studioAuth: false,
      authenticateDocs: true,
    });
    expect(readAuthSettings(project({ path: "auth.js" })).location?.exportName).toBe("default");
    expect(readAuthSettings(project(undefined))).toEqual({
      location: undefined,
      studioAuth: true,
      authenticateDocs: false,
    });
  });

  it("refuses options this server does not implement, saying what to do instead", () => {
    expect(() => readAuthSettings(project({ path: "a.ts", cache: { ttl_seconds: 5 } }))).toThrow(
      /auth\.cache is not supported by this server \(cache what/,
    );
    expect(() => readAuthSettings(project({ path: "a.ts", openapi: {} }))).toThrow(/auth\.openapi is not supported/);
  });

  it("loads the project's Auth with the project's own copy of the SDK", async () => {
    const loaded = await loadProjectAuth(readAuthSettings(join(fixture, "langgraph.json")));
    expect(isProjectAuth(loaded?.auth)).toBe(true);
    await loaded?.loader.close();
  });

  it("stops the start with a clear message for a missing module or export, or an export that is not an Auth", async () => {
    await expect(loadProjectAuth(readAuthSettings(project({ path: "./missing.ts:auth" })))).rejects.toThrow(
      /cannot load auth "\.\/missing\.ts:auth"/,
    );
    const settings = (path: string, exportName: string) => ({
      location: { spec: `${path}:${exportName}`, modulePath: join(fixture, path), exportName },
      studioAuth: true,
      authenticateDocs: false,
    });
    await expect(loadProjectAuth(settings("src/auth.ts", "nope"))).rejects.toThrow(
      /auth "src\/auth\.ts:nope": .*has no export "nope"/,
    );
    await expect(loadProjectAuth(settings("src/whoami.ts", "graph"))).rejects.toThrow(
      /export "graph" is not an Auth \(create it with new Auth\(\)/,
    );
  });
});
