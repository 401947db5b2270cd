import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { parseEnv } from "node:util";
import { z } from "zod";

/** The parts of `langgraph.json` the agent server uses. */
const GraphSpec = z.union([
  z.string().min(1),
  z.object({ path: z.string().min(1), description: z.string().optional() }),
]);

const ProjectFile = z.object({
  graphs: z.record(z.string().min(1), GraphSpec).refine((graphs) => Object.keys(graphs).length > 0, {
    message: "must name at least one graph",
  }),
  env: z.union([z.string(), z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]))]).optional(),
});

export interface GraphDefinition {
  graphId: string;
  /** Absolute path of the module. */
  modulePath: string;
  /** Name of the export; `default` when the spec has none. */
  exportName: string;
  description?: string;
}

export interface Project {
  configPath: string;
  /** Folder of `langgraph.json`; graph paths and the env file are relative to it. */
  root: string;
  graphs: GraphDefinition[];
  env: Record<string, string>;
}

export class ProjectError extends Error {}

export function parseGraphSpec(graphId: string, spec: z.infer<typeof GraphSpec>, root: string): GraphDefinition {
  const path = typeof spec === "string" ? spec : spec.path;
  const separator = path.lastIndexOf(":");
  // A colon at index 1 is a Windows drive letter, not an export separator.
  const hasExport = separator > 1;
  const file = hasExport ? path.slice(0, separator) : path;
  const definition: GraphDefinition = {
    graphId,
    modulePath: isAbsolute(file) ? file : resolve(root, file),
    exportName: hasExport ? path.slice(separator + 1) : "default",
  };
  if (typeof spec !== "string" && spec.description) definition.description = spec.description;
  return definition;
}

function readEnv(env: z.infer<typeof ProjectFile>["env"], root: string): Record<string, string> {
  if (env === undefined) return {};
  if (typeof env !== "string") return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)]));
  const path = resolve(root, env);
  try {
    return parseEnv(readFileSync(path, "utf8")) as Record<string, string>;
  } catch (error) {
    throw new ProjectError(`cannot read env file ${path}: ${(error as Error).message}`);
  }
}

/** Reads and validates `langgraph.json`; every problem becomes a one-line ProjectError. */
export function readProject(configPath: string): Project {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(configPath, "utf8"));
  } catch (error) {
    throw new ProjectError(`cannot read ${configPath}: ${(error as Error).message}`);
  }
  const parsed = ProjectFile.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ProjectError(`${configPath}: ${issue?.path.join(".") || "file"} ${issue?.message ?? "is invalid"}`);
  }
  const root = dirname(configPath);
  return {
    configPath,
    root,
    graphs: Object.entries(parsed.data.graphs).map(([id, spec]) => parseGraphSpec(id, spec, root)),
    env: readEnv(parsed.data.env, root),
  };
}

/**
 * Reads and validates one top-level section of `langgraph.json` (an absent section is `{}`); a
 * bad one is a ProjectError naming the offending key.
 */
export function readProjectSection<S extends z.ZodType>(configPath: string, section: string, schema: S): z.output<S> {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(readFileSync(configPath, "utf8"));
  } catch (error) {
    throw new ProjectError(`cannot read ${configPath}: ${(error as Error).message}`);
  }
  const parsed = schema.safeParse(json[section] ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ProjectError(
      `${configPath}: ${[section, ...(issue?.path ?? [])].join(".")} ${issue?.message ?? "is invalid"}`,
    );
  }
  return parsed.data;
}

/** Variables already set in the process win over the project's defaults. */
export function applyProjectEnv(env: Record<string, string>, target: NodeJS.ProcessEnv = process.env): void {
  for (const [key, value] of Object.entries(env)) {
    if (target[key] === undefined) target[key] = value;
  }
}
