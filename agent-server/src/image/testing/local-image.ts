import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, posix, relative } from "node:path";
import type { AssembledStage } from "./assemble.ts";

interface LockedPackage {
  dev?: boolean;
}

function lockedPackages(dir: string): Record<string, LockedPackage> {
  return (
    JSON.parse(readFileSync(join(dir, "package-lock.json"), "utf8")) as { packages: Record<string, LockedPackage> }
  ).packages;
}

/**
 * The local stand-in for `npm ci` in a copy of this repository: the checkout's installed
 * node_modules (root and workspaces), hard-linked so it costs seconds and the copy resolves
 * exactly like a fresh install inside the stage. Needs `workDir` on the checkout's filesystem.
 */
export function installLockedModules(stageDir: string, repoDir: string): void {
  const folders = new Set(
    Object.keys(lockedPackages(repoDir)).flatMap((key) => {
      const match = /^(?:([^/]+)\/)?node_modules\//.exec(key);
      return match ? [match[1] ?? ""] : [];
    }),
  );
  for (const folder of folders) {
    const source = join(repoDir, folder, "node_modules");
    if (!existsSync(source)) continue;
    const target = join(stageDir, folder, "node_modules");
    const copy = spawnSync("cp", ["-al", source, target], { encoding: "utf8" });
    if (copy.status !== 0) throw new Error(`cp -al ${source} failed: ${copy.stderr}`);
    // Tool caches of the checkout (vitest writes into them while tests run); `npm ci` makes none.
    for (const cache of [".cache", ".vite", ".vite-temp"])
      rmSync(join(target, cache), { recursive: true, force: true });
  }
}

/** `npm prune --omit=dev`: removes what the lockfile marks dev-only (unlinking, so the checkout is untouched). */
export function pruneDevModules(stageDir: string): number {
  let removed = 0;
  for (const [key, entry] of Object.entries(lockedPackages(stageDir))) {
    if (!entry.dev || !key.includes("node_modules/")) continue;
    const path = join(stageDir, key);
    if (existsSync(path)) {
      rmSync(path, { recursive: true, force: true });
      removed++;
    }
  }
  rmSync(join(stageDir, "node_modules", ".bin"), { recursive: true, force: true });
  return removed;
}

/** A project's declared dependencies linked from the repository's node_modules (the stand-in for its install). */
export function linkDeclaredModules(projectDir: string, repoDir: string): void {
  const manifest = JSON.parse(readFileSync(join(projectDir, "package.json"), "utf8")) as {
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  for (const name of Object.keys({ ...manifest.dependencies, ...manifest.devDependencies })) {
    const linkPath = join(projectDir, "node_modules", name);
    mkdirSync(dirname(linkPath), { recursive: true });
    symlinkSync(join(repoDir, "node_modules", name), linkPath);
  }
}

/** Every path below `root` with its size and modification time, symlinks not followed. */
export function snapshotTree(root: string): Map<string, string> {
  const snapshot = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      const stat = lstatSync(path);
      snapshot.set(relative(root, path), `${stat.size}:${stat.mtimeMs}`);
      if (entry.isDirectory()) walk(path);
    }
  };
  walk(root);
  return snapshot;
}

/** The host path of an image path, for arguments that name files in the image. */
export function hostPath(stage: AssembledStage, imagePath: string): string {
  return join(stage.root, posix.resolve(stage.config.workdir, imagePath));
}

/**
 * Resolves the image's ENTRYPOINT + CMD (or a replacement command) to a host `node` command line:
 * tini (a Debian package, not present here) is checked by name, the wrapper script on the image's
 * PATH is read for the node entry point it execs, and arguments naming image files are mapped
 * into the assembled tree.
 */
export function resolveCommand(stage: AssembledStage, command = stage.config.cmd): { script: string; args: string[] } {
  const argv = [...stage.config.entrypoint, ...command];
  if (argv[0] !== "/usr/bin/tini" || argv[1] !== "--") {
    throw new Error(`expected tini as the entry point, got ${JSON.stringify(argv)}`);
  }
  const [program, ...args] = argv.slice(2);
  const wrapper = ["/usr/local/bin", "/usr/bin"]
    .map((dir) => join(stage.root, dir, program ?? ""))
    .find((path) => existsSync(path));
  if (!wrapper) throw new Error(`${program} is not on the image's PATH`);
  const exec = /^exec node (\S+) "\$@"$/m.exec(readFileSync(wrapper, "utf8"));
  if (!exec) throw new Error(`${wrapper} does not exec a node entry point`);
  const script = join(stage.root, exec[1]!);
  if (!existsSync(script)) throw new Error(`${exec[1]} is missing from the image`);
  return {
    script,
    args: args.map((arg) => (arg.startsWith("/") && existsSync(join(stage.root, arg)) ? join(stage.root, arg) : arg)),
  };
}

/** Copies a JSON file of the image with every `/deps/...` path pointed into the assembled tree. */
export function relocateConfig(stage: AssembledStage, configHostPath: string, outPath: string): string {
  const text = readFileSync(configHostPath, "utf8").replaceAll('"/deps/', `"${join(stage.root, "deps")}/`);
  writeFileSync(outPath, text);
  return outPath;
}

export interface StartedProcess {
  child: ChildProcess;
  output(): string;
  stop(): Promise<number | null>;
}

/** Runs node on an image entry point the way the container would, with the image's ENV. */
export function startNode(
  stage: AssembledStage,
  command: { script: string; args: string[] },
  env: Record<string, string>,
): StartedProcess {
  const chunks: string[] = [];
  const child = spawn(process.execPath, [command.script, ...command.args], {
    cwd: join(stage.root, stage.config.workdir),
    env: { PATH: process.env.PATH ?? "", ...stage.config.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (chunk) => chunks.push(String(chunk)));
  child.stderr?.on("data", (chunk) => chunks.push(String(chunk)));
  return {
    child,
    output: () => chunks.join(""),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        child.once("exit", (code) => resolve(code));
        child.kill("SIGTERM");
      }),
  };
}

/** Polls `url` until it answers 2xx; fails with the process output when it exits or time runs out. */
export async function waitForOk(url: string, started: StartedProcess, timeoutMs = 60_000): Promise<Response> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (started.child.exitCode !== null) {
      throw new Error(`exited with ${started.child.exitCode} before ${url} answered:\n${started.output()}`);
    }
    try {
      const response = await fetch(url);
      if (response.ok) return response;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms:\n${started.output()}`);
}
