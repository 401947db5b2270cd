import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { z } from "zod";
import { type GraphProject, ImageConfigError, type PackageJson } from "./dockerfile.ts";

const GraphSpec = z.union([z.string().min(1), z.looseObject({ path: z.string().min(1) })]);

/**
 * The part of `langgraph.json` an image build depends on. The env file is deliberately not read:
 * it is usually git-ignored, and it is not baked into images.
 */
const BuildConfig = z.looseObject({
  graphs: z.record(z.string().min(1), GraphSpec).refine((graphs) => Object.keys(graphs).length > 0, {
    message: "must name at least one graph",
  }),
});

function readJson(path: string, what: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new ImageConfigError(`cannot read ${what} ${path}: ${(error as Error).message}`);
  }
}

export interface LocatedProject {
  /** The build context: the folder holding the config. */
  contextDir: string;
  project: GraphProject;
}

/** Reads what the Dockerfile generator needs from a project on disk. */
export function readGraphProject(configPath: string): LocatedProject {
  const absolute = resolve(configPath);
  const contextDir = dirname(absolute);
  const parsed = BuildConfig.safeParse(readJson(absolute, "config"));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ImageConfigError(`${absolute}: ${issue?.path.join(".") || "file"} ${issue?.message ?? "is invalid"}`);
  }
  const packagePath = resolve(contextDir, "package.json");
  if (!existsSync(packagePath)) {
    throw new ImageConfigError(
      `no package.json next to ${absolute}: a graph image installs the project's dependencies from it`,
    );
  }
  return {
    contextDir,
    project: {
      configFile: basename(absolute),
      config: parsed.data,
      packageJson: readJson(packagePath, "package.json") as PackageJson,
      rootFiles: new Set(readdirSync(contextDir)),
    },
  };
}
