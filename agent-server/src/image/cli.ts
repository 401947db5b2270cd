import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { buildImage, DockerUnavailableError } from "./build.ts";
import { generateDockerfile, generateDockerignore, ImageConfigError } from "./dockerfile.ts";
import { readGraphProject } from "./project.ts";

const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  version: string;
};

/** The base image `make images` builds; override with --base-image when it lives in a registry. */
export const DEFAULT_BASE_IMAGE = `agentplane/agent-server:${version}`;

export const IMAGE_USAGE = `Usage:
  agent-server dockerfile [-c langgraph.json] [-o Dockerfile] [--base-image IMAGE]
  agent-server build -t TAG [-c langgraph.json] [--base-image IMAGE] [-- DOCKER_BUILD_ARGS...]

  dockerfile  print (or write with -o) a Dockerfile for the project's graph image; with -o, also
              writes a .dockerignore next to it when the project has none
  build       generate that Dockerfile and run \`docker build\` (needs Docker)

  Default base image: ${DEFAULT_BASE_IMAGE}`;

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

function writeDockerfile(configPath: string, baseImage: string, output: string | undefined, io: Output): void {
  const { project } = readGraphProject(configPath);
  const dockerfile = generateDockerfile(project, { baseImage });
  if (!output) {
    io.out(dockerfile);
    return;
  }
  writeFileSync(output, dockerfile);
  const ignorePath = join(dirname(resolve(output)), ".dockerignore");
  if (!existsSync(ignorePath)) writeFileSync(ignorePath, generateDockerignore());
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
