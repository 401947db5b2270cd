import { posix } from "node:path";

/** Where a user's project lives inside their graph image. */
export const PROJECT_DIR = "/deps/app";
/** The baked `langgraph.json` every graph image starts from, whatever the project called its file. */
export const BAKED_CONFIG_PATH = "/deps/langgraph.json";
/** The agent-server base image runs Node 24; a project asking for another major cannot use it. */
export const BASE_NODE_MAJOR = "24";

export type PackageManager = "npm" | "yarn" | "yarn-berry" | "pnpm" | "bun";

export interface PackageJson {
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  packageManager?: string;
}

/** What the generator needs to know about a project; `project.ts` reads it from disk. */
export interface GraphProject {
  /** File name of the config inside the project root (the build context), e.g. `langgraph.json`. */
  configFile: string;
  /** The parsed config, already validated by the agent server's project reader. */
  config: Record<string, unknown>;
  packageJson: PackageJson;
  /** Names of the files in the project root; lockfiles and tool configs are looked up here. */
  rootFiles: ReadonlySet<string>;
}

export interface DockerfileOptions {
  baseImage: string;
}

export class ImageConfigError extends Error {}

const LOCKFILES: [file: string, manager: PackageManager][] = [
  ["pnpm-lock.yaml", "pnpm"],
  ["bun.lock", "bun"],
  ["bun.lockb", "bun"],
  ["yarn.lock", "yarn"],
  ["package-lock.json", "npm"],
  ["npm-shrinkwrap.json", "npm"],
];

/** The package manager the project's lockfile belongs to; yarn 2+ is told apart by `.yarnrc.yml` or `packageManager`. */
export function detectPackageManager(project: Pick<GraphProject, "rootFiles" | "packageJson">): PackageManager {
  const fromLockfile = LOCKFILES.find(([file]) => project.rootFiles.has(file))?.[1];
  const declared = project.packageJson.packageManager?.split("@")[0];
  const manager = fromLockfile ?? (declared === "pnpm" || declared === "yarn" || declared === "bun" ? declared : "npm");
  if (manager !== "yarn") return manager;
  const declaredMajor = Number(project.packageJson.packageManager?.match(/^yarn@(\d+)/)?.[1] ?? 1);
  return project.rootFiles.has(".yarnrc.yml") || declaredMajor >= 2 ? "yarn-berry" : "yarn";
}

function hasLockfile(project: GraphProject): boolean {
  return LOCKFILES.some(([file]) => project.rootFiles.has(file));
}

/** Files the install step needs, copied before the sources so the dependency layer is cached. */
function installInputs(project: GraphProject): string[] {
  const candidates = [
    "package.json",
    ...LOCKFILES.map(([file]) => file),
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    "pnpm-workspace.yaml",
  ];
  return candidates.filter((file) => file === "package.json" || project.rootFiles.has(file));
}

/**
 * The base image sets NODE_ENV=production, which makes every package manager skip devDependencies;
 * the build step needs them (TypeScript, build tools), so the install runs with NODE_ENV=development.
 */
function installCommand(manager: PackageManager, locked: boolean): string {
  const install = (command: string) => `NODE_ENV=development ${command}`;
  switch (manager) {
    case "npm":
      return install(locked ? "npm ci --no-audit --no-fund" : "npm install --no-audit --no-fund");
    case "yarn":
      return `corepack enable && ${install(`yarn install${locked ? " --frozen-lockfile" : ""}`)}`;
    case "yarn-berry":
      return `corepack enable && ${install(`yarn install${locked ? " --immutable" : ""}`)}`;
    case "pnpm":
      return `corepack enable && ${install(`pnpm install${locked ? " --frozen-lockfile" : ""}`)}`;
    case "bun":
      return `npm install --global bun && ${install(`bun install${locked ? " --frozen-lockfile" : ""}`)}`;
  }
}

/**
 * A `build` script is the project's own compile step; without one, a TypeScript project is
 * type-checked so type errors fail the image build (the server runs `.ts` graphs through tsx).
 */
function compileCommand(project: GraphProject, manager: PackageManager): string | undefined {
  if (project.packageJson.scripts?.build) return `${manager === "yarn-berry" ? "yarn" : manager} run build`;
  const deps = { ...project.packageJson.dependencies, ...project.packageJson.devDependencies };
  if (project.rootFiles.has("tsconfig.json") && deps.typescript) {
    return "node node_modules/typescript/bin/tsc --noEmit -p tsconfig.json";
  }
  return undefined;
}

/** `./src/agent.ts:graph` → `/deps/app/src/agent.ts:graph`; paths leaving the build context are refused. */
function toImagePath(spec: string, field: string): string {
  const separator = spec.lastIndexOf(":");
  const file = separator > 1 ? spec.slice(0, separator) : spec;
  const suffix = separator > 1 ? spec.slice(separator) : "";
  const absolute = posix.join(PROJECT_DIR, file.replaceAll("\\", "/"));
  if (posix.isAbsolute(file) || !absolute.startsWith(`${PROJECT_DIR}/`)) {
    throw new ImageConfigError(`${field} "${spec}" must be a path inside the project folder`);
  }
  return `${absolute}${suffix}`;
}

function rewriteGraphs(graphs: unknown): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(graphs as Record<string, string | { path: string }>).map(([id, spec]) =>
      typeof spec === "string"
        ? [id, toImagePath(spec, `graphs.${id}`)]
        : [id, { ...spec, path: toImagePath(spec.path, `graphs.${id}.path`) }],
    ),
  );
}

function rewriteNested(value: unknown, key: string, field: string): unknown {
  if (typeof value !== "object" || value === null) return value;
  const record = value as Record<string, unknown>;
  return typeof record[key] === "string" ? { ...record, [key]: toImagePath(record[key], field) } : value;
}

/**
 * The config baked into the image: module paths made absolute so it can live at a fixed path, and an
 * env *file* dropped (it usually holds secrets; deployments pass secrets as environment variables).
 */
export function bakeConfig(config: Record<string, unknown>): Record<string, unknown> {
  const baked: Record<string, unknown> = { ...config, graphs: rewriteGraphs(config.graphs) };
  if (typeof baked.env === "string") delete baked.env;
  if ("auth" in baked) baked.auth = rewriteNested(baked.auth, "path", "auth.path");
  if ("http" in baked) baked.http = rewriteNested(baked.http, "app", "http.app");
  return baked;
}

function checkNodeVersion(config: Record<string, unknown>): void {
  const requested = config.node_version;
  if (requested === undefined) return;
  if (String(requested).split(".")[0] !== BASE_NODE_MAJOR) {
    throw new ImageConfigError(
      `node_version "${requested}" is not supported: the agent-server base image runs Node ${BASE_NODE_MAJOR}`,
    );
  }
}

function extraLines(config: Record<string, unknown>): string[] {
  const lines = config.dockerfile_lines;
  if (lines === undefined) return [];
  if (!Array.isArray(lines) || lines.some((line) => typeof line !== "string")) {
    throw new ImageConfigError("dockerfile_lines must be an array of strings");
  }
  return lines as string[];
}

const json = (value: unknown) => JSON.stringify(value);

/** The Dockerfile of a graph image: the project on top of the agent-server base image, served by `agent-server serve`. */
export function generateDockerfile(project: GraphProject, options: DockerfileOptions): string {
  checkNodeVersion(project.config);
  const manager = detectPackageManager(project);
  const compile = compileCommand(project, manager);
  const extra = extraLines(project.config);
  const baked = JSON.stringify(bakeConfig(project.config), null, 2);
  return [
    "# syntax=docker/dockerfile:1",
    `# Generated by \`agent-server dockerfile\` from ${project.configFile}; regenerate instead of editing.`,
    "# The agent-server base image: `make images` in the agentplane repository builds it (docker/Dockerfile).",
    `FROM ${options.baseImage}`,
    "# Dependencies and build output belong to root, so the server (uid 1000) cannot modify its own code.",
    "USER root",
    `WORKDIR ${PROJECT_DIR}`,
    `COPY ${installInputs(project).join(" ")} ./`,
    `RUN ${installCommand(manager, hasLockfile(project))}`,
    "COPY . .",
    ...(compile ? [`RUN ${compile}`] : []),
    ...(extra.length > 0 ? [`# dockerfile_lines from ${project.configFile}`, ...extra] : []),
    `COPY <<"LANGGRAPH_JSON" ${BAKED_CONFIG_PATH}`,
    baked,
    "LANGGRAPH_JSON",
    "USER 1000:1000",
    `CMD ${json(["agent-server", "serve", "--config", BAKED_CONFIG_PATH])}`,
    "",
  ].join("\n");
}

/** Keeps installed dependencies, VCS data and env files (secrets) out of the build context. */
export function generateDockerignore(existing = ""): string {
  const defaults = ["node_modules", ".git", ".env", ".env.*", "!.env.example", ".langgraph_api", "*.log"];
  const lines = existing.split(/\r?\n/).filter((line) => line.trim().length > 0);
  return [...lines, ...defaults.filter((line) => !lines.includes(line))].join("\n").concat("\n");
}
