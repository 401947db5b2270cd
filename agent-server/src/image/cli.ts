import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { buildImage, DockerUnavailableError } from "./build.ts";
import { generateDockerfile, generateDockerignore, ImageConfigError } from "./dockerfile.ts";
import { readGraphProject } from "./project.ts";

const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  version: string;
};

/**
 * The base image `make images` builds in the agentplane repository (docker/Dockerfile); it is on no
 * public registry: push it to yours and pass --base-image.
 */
export const DEFAULT_BASE_IMAGE = `agentplane/agent-server:${version}`;

export const IMAGE_USAGE = `Usage:
  agent-server dockerfile [-c langgraph.json] [-o Dockerfile] [--base-image IMAGE]
  agent-server build -t TAG [-c langgraph.json] [--base-image IMAGE] [-- DOCKER_BUILD_ARGS...]

  dockerfile  print (or write with -o) a Dockerfile for the project's graph image; the build
              context is the folder of langgraph.json, so its .dockerignore is written (or the
              missing defaults appended) to keep node_modules, .git and .env files out
  build       generate that Dockerfile and run \`docker build\` (needs Docker)

  Default base image: ${DEFAULT_BASE_IMAGE}, built by \`make images\` in the agentplane
  repository (on no public registry: push it to yours and pass --base-image)`;

interface Output {
  out(text: string): void;
  err(text: string): void;
}

const processOutput: Output = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      config: { type: "string", short: "c", default: "langgraph.json" },
      output: { type: "string", short: "o" },
      tag: { type: "string", short: "t" },
      "base-image": { type: "string", default: DEFAULT_BASE_IMAGE },
      help: { type: "boolean", short: "h" },
    },
  });
}

/**
 * The build context is the project folder however the Dockerfile is saved (`-o`, `> Dockerfile`, a CI
 * step), so its `.dockerignore` must keep node_modules, .git and env files (secrets) out of
 * `COPY . .`: written when missing, the missing defaults appended otherwise (as `build` does).
 */
function ensureDockerignore(contextDir: string, io: Output): void {
  const path = join(contextDir, ".dockerignore");
  if (!existsSync(path)) {
    writeFileSync(path, generateDockerignore());
    io.err(`wrote ${path}\n`);
    return;
  }
  const existing = readFileSync(path, "utf8");
  const present = new Set(existing.split(/\r?\n/).map((line) => line.trim()));
  const missing = generateDockerignore()
    .trim()
    .split("\n")
    .filter((line) => !present.has(line));
  if (missing.length === 0) return;
  const separator = existing === "" || existing.endsWith("\n") ? "" : "\n";
  appendFileSync(path, `${separator}# added by agent-server dockerfile\n${missing.join("\n")}\n`);
  io.err(`added ${missing.join(", ")} to ${path}\n`);
}

function writeDockerfile(configPath: string, baseImage: string, output: string | undefined, io: Output): void {
  const { contextDir, project } = readGraphProject(configPath);
  const dockerfile = generateDockerfile(project, { baseImage });
  ensureDockerignore(contextDir, io);
  if (!output) {
    io.out(dockerfile);
    return;
  }
  writeFileSync(output, dockerfile);
  io.err(`wrote ${output}\n`);
}

/** `agent-server dockerfile|build …`; resolves to the process exit code. */
export async function runImageCommand(
  command: "dockerfile" | "build",
  argv: string[],
  io: Output = processOutput,
): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    io.err(`${(error as Error).message}\n${IMAGE_USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(`${IMAGE_USAGE}\n`);
    return 0;
  }
  try {
    if (command === "dockerfile") {
      if (positionals.length > 0) throw new ImageConfigError(`unexpected argument "${positionals[0]}"`);
      writeDockerfile(values.config, values["base-image"], values.output, io);
      return 0;
    }
    if (!values.tag) throw new ImageConfigError("build needs an image tag: -t <name:tag>");
    return await buildImage({
      configPath: values.config,
      tag: values.tag,
      baseImage: values["base-image"],
      extraArgs: positionals,
    });
  } catch (error) {
    if (error instanceof ImageConfigError || error instanceof DockerUnavailableError) {
      io.err(`agent-server ${command}: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}
