import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, posix, relative } from "node:path";
import {
  dockerignoreMatcher,
  globToRegex,
  type Instruction,
  jsonOrShell,
  parseDockerfile,
  parseEnv,
  type Stage,
  substitute,
} from "./dockerfile.ts";

/**
 * Builds an image's file tree in a local folder by interpreting its Dockerfile, for machines
 * without a Docker engine. COPY, WORKDIR, ENV, USER and the metadata instructions are carried out
 * exactly; each RUN goes to a caller-supplied interpreter that does the local equivalent (or records
 * it as not checkable here). Base images (`FROM node:…`) start as empty trees.
 */

export interface ImageConfig {
  env: Record<string, string>;
  user?: string;
  workdir: string;
  entrypoint: string[];
  cmd: string[];
  expose: string[];
  healthcheck?: string;
}

export interface AssembledStage {
  /** The stage's root filesystem. */
  root: string;
  /** The external image at the bottom of the stage's FROM chain. */
  baseImage: string;
  config: ImageConfig;
  /** RUN commands recorded as impossible to check here. */
  unchecked: string[];
}

export interface RunContext {
  command: string;
  root: string;
  /** Working directory inside the image (absolute). */
  workdir: string;
  /** Host path of the working directory. */
  hostWorkdir: string;
  env: Record<string, string>;
  /** Record the command as not checkable without a Docker engine. */
  skip(reason: string): void;
}

export type RunInterpreter = (context: RunContext) => void;

export interface AssembleOptions {
  dockerfile: string;
  /** Build context on the host. */
  contextDir: string;
  /** Contents of the applicable `.dockerignore` (empty when none). */
  dockerignore?: string;
  /** Folder that receives one root filesystem per stage. */
  workDir: string;
  run: RunInterpreter;
  /** Trees for external images (`FROM agentplane/agent-server:…`), e.g. an image assembled earlier. */
  images?: Record<string, AssembledStage>;
}

export class ImageAssembler {
  private readonly stages: Stage[];
  private readonly done = new Map<string, AssembledStage>();
  private readonly ignored: (path: string) => boolean;
  private readonly options: AssembleOptions;

  constructor(options: AssembleOptions) {
    this.options = options;
    this.stages = parseDockerfile(options.dockerfile);
    this.ignored = dockerignoreMatcher(options.dockerignore ?? "");
  }

  stageNames(): string[] {
    return this.stages.map((stage) => stage.name);
  }

  /** Assembles a stage (the last one by default) and the stages it depends on, each once. */
  assemble(target = this.stages.at(-1)?.name ?? ""): AssembledStage {
    const cached = this.done.get(target);
    if (cached) return cached;
    const stage = this.stages.find((candidate) => candidate.name === target);
    if (!stage) throw new Error(`no stage named ${target}`);
    const result = this.start(stage);
    for (const instruction of stage.instructions) this.apply(result, instruction);
    this.done.set(target, result);
    return result;
  }

  private start(stage: Stage): AssembledStage {
    const root = join(this.options.workDir, `stage-${stage.name}`);
    const parent = this.stages.some((s) => s.name === stage.from)
      ? this.assemble(stage.from)
      : this.options.images?.[stage.from];
    if (parent) {
      linkTree(parent.root, root);
      return {
        root,
        baseImage: parent.baseImage,
        config: structuredClone(parent.config),
        unchecked: [...parent.unchecked],
      };
    }
    mkdirSync(root, { recursive: true });
    return {
      root,
      baseImage: stage.from,
      config: { env: {}, workdir: "/", entrypoint: [], cmd: [], expose: [] },
      unchecked: [],
    };
  }

  private hostPath(stage: AssembledStage, imagePath: string): string {
    return join(stage.root, posix.resolve(stage.config.workdir, imagePath));
  }

  private apply(stage: AssembledStage, instruction: Instruction): void {
    const { keyword, args } = instruction;
    switch (keyword) {
      case "WORKDIR":
        stage.config.workdir = posix.resolve(stage.config.workdir, substitute(args, stage.config.env));
        mkdirSync(this.hostPath(stage, "."), { recursive: true });
        return;
      case "ENV":
        Object.assign(stage.config.env, parseEnv(args));
        return;
      case "USER":
        stage.config.user = args;
        return;
      case "EXPOSE":
        stage.config.expose.push(...args.split(/\s+/));
        return;
      case "ENTRYPOINT":
        stage.config.entrypoint = jsonOrShell(args);
        return;
      case "CMD":
        stage.config.cmd = jsonOrShell(args);
        return;
      case "HEALTHCHECK":
        stage.config.healthcheck = args;
        return;
      case "ARG":
      case "LABEL":
        return;
      case "COPY":
        this.copy(stage, instruction);
        return;
      case "RUN":
        this.options.run({
          command: args,
          root: stage.root,
          workdir: stage.config.workdir,
          hostWorkdir: this.hostPath(stage, "."),
          env: stage.config.env,
          skip: (reason) => stage.unchecked.push(`${args} (${reason})`),
        });
        return;
      default:
        throw new Error(`the assembler does not support ${keyword}`);
    }
  }

  private copy(stage: AssembledStage, { args, heredoc }: Instruction): void {
    const words = args.split(/\s+/);
    const flags = words.filter((word) => word.startsWith("--"));
    const [dest, ...sourcesReversed] = words.filter((word) => !word.startsWith("--")).reverse();
    const sources = sourcesReversed.reverse();
    if (!dest) throw new Error(`COPY without destination: ${args}`);
    const target = this.hostPath(stage, dest);
    if (heredoc !== undefined) {
      mkdirSync(dirname(target), { recursive: true });
      rmSync(target, { force: true });
      writeFileSync(target, heredoc);
      return;
    }
    const fromStage = flags.find((flag) => flag.startsWith("--from="))?.slice("--from=".length);
    const sourceRoot = fromStage ? this.assemble(fromStage).root : this.options.contextDir;
    const expanded = sources.flatMap((source) => this.expand(sourceRoot, source, fromStage !== undefined));
    if (expanded.length === 0) throw new Error(`COPY ${args}: no source files`);
    const intoDirectory =
      dest.endsWith("/") || sources.length > 1 || (existsSync(target) && statSync(target).isDirectory());
    for (const source of expanded) {
      const isDirectory = statSync(source).isDirectory();
      const to = isDirectory || !intoDirectory ? target : join(target, basename(source));
      mkdirSync(isDirectory ? to : dirname(to), { recursive: true });
      if (fromStage !== undefined && isDirectory) {
        linkTree(source, to);
        continue;
      }
      cpSync(source, to, {
        recursive: true,
        verbatimSymlinks: true,
        filter: (path, destination) => {
          if (fromStage === undefined && path !== source && this.ignored(relative(this.options.contextDir, path))) {
            return false;
          }
          // Never write through a hard link shared with another stage.
          if (existsSync(destination) && !statSync(destination).isDirectory()) rmSync(destination);
          return true;
        },
      });
    }
  }

  /** Host paths a COPY source names: `*` globs in the last segment, ignored context files left out. */
  private expand(root: string, source: string, fromStage: boolean): string[] {
    const path = fromStage ? source : posix.normalize(source).replace(/\/$/, "");
    const absolute = join(root, path);
    const name = basename(path);
    if (!/[*?]/.test(name)) {
      if (!existsSync(absolute)) throw new Error(`COPY source ${source} does not exist`);
      if (!fromStage && path !== "." && this.ignored(relative(root, absolute))) {
        throw new Error(`COPY source ${source} is excluded by .dockerignore`);
      }
      return [absolute];
    }
    const pattern = globToRegex(name);
    return readdirSync(dirname(absolute))
      .filter((entry) => pattern.test(entry))
      .map((entry) => join(dirname(absolute), entry))
      .filter((entry) => fromStage || !this.ignored(relative(root, entry)));
  }
}

/**
 * Stage trees share files through hard links (seconds instead of copying node_modules again); every
 * write into a stage replaces files instead of writing through them, so stages never alter each other.
 */
function linkTree(source: string, destination: string): void {
  mkdirSync(destination, { recursive: true });
  const copy = spawnSync("cp", ["-al", `${source}/.`, destination], { encoding: "utf8" });
  if (copy.status !== 0) throw new Error(`cp -al ${source} ${destination} failed: ${copy.stderr}`);
}
