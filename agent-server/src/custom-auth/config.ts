import { dirname, resolve } from "node:path";
import { z } from "zod";
import { readProjectSection } from "../graphs/project.ts";

/** Options of other LangGraph servers this one does not implement, and what to do instead. */
const UNSUPPORTED_HINTS: Record<string, string> = {
  cache: "cache what your authenticate handler looks up inside the handler itself",
  openapi: "/openapi.json documents the API-key scheme only; describe your token scheme in your API docs",
};

const KNOWN_KEYS = new Set(["path", "disable_studio_auth", "authenticate_docs"]);

/**
 * The `auth` section of `langgraph.json`, as the reference servers define it. Keys this server
 * does not implement are refused, so an option never silently has no effect.
 */
const AuthSection = z
  .object({
    path: z.string().min(1).optional(),
    disable_studio_auth: z.boolean().optional(),
    authenticate_docs: z.boolean().optional(),
  })
  .catchall(z.unknown())
  .superRefine((section, ctx) => {
    for (const key of Object.keys(section)) {
      if (KNOWN_KEYS.has(key)) continue;
      const hint = UNSUPPORTED_HINTS[key];
      ctx.addIssue({
        code: "custom",
        path: [key],
        message: `is not supported by this server${hint ? ` (${hint})` : ""}`,
      });
    }
  });

/** Where the project's `Auth` lives: `./src/auth.ts:auth` → the file (absolute) and the export (default `default`). */
export interface AuthLocation {
  spec: string;
  modulePath: string;
  exportName: string;
}

export interface AuthSettings {
  location: AuthLocation | undefined;
  /** Requests marked `x-auth-scheme: langsmith` (Studio) that carry a valid API key act as the Studio user. */
  studioAuth: boolean;
  /** `/docs` and `/openapi.json` are authenticated like the API (as on the reference JS server), not public. */
  authenticateDocs: boolean;
}

/** Reads `auth` from `langgraph.json`; a bad section is a ProjectError (exit code 2). */
export function readAuthSettings(configPath: string): AuthSettings {
  const section = readProjectSection(configPath, "auth", AuthSection);
  let location: AuthLocation | undefined;
  if (section.path) {
    // A Windows drive letter is not an export separator: split at the last colon after the file name.
    const colon = section.path.lastIndexOf(":");
    const hasExport = colon > 1;
    const file = hasExport ? section.path.slice(0, colon) : section.path;
    location = {
      spec: section.path,
      modulePath: resolve(dirname(configPath), file),
      exportName: (hasExport && section.path.slice(colon + 1)) || "default",
    };
  }
  return {
    location,
    studioAuth: !section.disable_studio_auth,
    authenticateDocs: section.authenticate_docs ?? false,
  };
}
