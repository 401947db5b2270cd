import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateDockerfile, generateDockerignore } from "./dockerfile.ts";
import { readGraphProject } from "./project.ts";

/** Docker is missing or its engine is unreachable: the message says what to do instead. */
export class DockerUnavailableError extends Error {}

export interface BuildImageOptions {
  configPath: string;
  tag: string;
  baseImage: string;
  /** Passed to `docker build` before the context, e.g. `--platform linux/amd64`. */
  extraArgs?: string[];
  /** The Docker CLI to run (PATH lookup by default). */
  docker?: string;
}

const WITHOUT_DOCKER =
  "run `agent-server dockerfile -o Dockerfile` and build it with any OCI builder (podman, buildah, kaniko)";

/** Fails fast, before any work, when `docker build` could not possibly succeed. */
export function checkDocker(docker = "docker"): void {
  const probe = spawnSync(docker, ["version", "--format", "{{.Server.Version}}"], { encoding: "utf8" });
  if (probe.error) {
    throw new DockerUnavailableError(
      `\`${docker}\` was not found: \`agent-server build\` needs Docker; ${WITHOUT_DOCKER}`,
    );
  }
  if (probe.status !== 0) {
    const reason = (probe.stderr || probe.stdout).trim().split("\n")[0] ?? "";
    throw new DockerUnavailableError(`the Docker engine is not reachable (${reason}); start it, or ${WITHOUT_DOCKER}`);
  }
}

export function dockerBuildArgs(tag: string, dockerfile: string, contextDir: string, extra: string[] = []): string[] {
  return ["build", "--tag", tag, "--file", dockerfile, ...extra, contextDir];
}

/**
 * Builds a graph image with `docker build`. The generated Dockerfile and its ignore file live in a
 * temporary folder (BuildKit reads `<Dockerfile>.dockerignore`), so the project is left untouched.
 * Resolves to docker's exit code.
 */
export async function buildImage(options: BuildImageOptions): Promise<number> {
  const docker = options.docker ?? "docker";
  checkDocker(docker);
  const { contextDir, project } = readGraphProject(options.configPath);
  const workDir = mkdtempSync(join(tmpdir(), "agent-server-build-"));
  try {
    const dockerfile = join(workDir, "Dockerfile");
    const projectIgnore = join(contextDir, ".dockerignore");
    writeFileSync(dockerfile, generateDockerfile(project, { baseImage: options.baseImage }));
    writeFileSync(
      `${dockerfile}.dockerignore`,
      generateDockerignore(existsSync(projectIgnore) ? readFileSync(projectIgnore, "utf8") : ""),
    );
    const child = spawn(docker, dockerBuildArgs(options.tag, dockerfile, contextDir, options.extraArgs), {
      stdio: "inherit",
      env: { ...process.env, DOCKER_BUILDKIT: "1" },
    });
    return await new Promise<number>((resolveExit, reject) => {
      child.once("error", reject);
      child.once("exit", (code, signal) => resolveExit(code ?? (signal ? 128 : 1)));
    });
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}
