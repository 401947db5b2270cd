import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);

/** Version of an installed package, found by walking up from its entry point to its package.json. */
export function installedVersion(packageName: string): string {
  let dir = dirname(require.resolve(packageName));
  while (dir !== dirname(dir)) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
        name?: string;
        version?: string;
      };
      if (manifest.name === packageName && manifest.version) return manifest.version;
    } catch {
      // no package.json at this level
    }
    dir = dirname(dir);
  }
  return "unknown";
}

/** This package's own version, from agent-server/package.json (one level above src/ and dist/). */
export function serverVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return manifest.version;
}
