// The commands the docs show, read from their markdown, and the means to run them as written: a bash
// runner, long-running commands watched until they print what they serve, stand-ins for the tools the
// docs offer wrappers for, and a fresh working copy of the repository to run `make` targets in.
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const REPO = resolve(import.meta.dirname, "..");

export interface DocBlock {
  file: string;
  /** The heading the block sits under, without its `#`s. */
  section: string;
  /** The fence's language (`sh`, `ts`, …; empty for diagrams). */
  lang: string;
  text: string;
  line: number;
}

const SHELL = new Set(["sh", "bash"]);

/** The fenced blocks of a markdown file (path relative to the repository), indentation removed. */
export function docBlocks(file: string): DocBlock[] {
  const lines = readFileSync(join(REPO, file), "utf8").split("\n");
  const blocks: DocBlock[] = [];
  let section = "";
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (heading) section = heading[1] as string;
    const fence = /^( *)```(\w*)$/.exec(line);
    if (!fence) continue;
    const indent = (fence[1] as string).length;
    const body: string[] = [];
    const start = i + 1;
    for (i++; i < lines.length && (lines[i] as string).trim() !== "```"; i++)
      body.push((lines[i] as string).slice(indent));
    blocks.push({ file, section, lang: fence[2] as string, text: `${body.join("\n")}\n`, line: start });
  }
  return blocks;
}

/** The shell blocks of a file, optionally only those of one section. */
export function shellBlocks(file: string, section?: string): DocBlock[] {
  return docBlocks(file).filter(
    (block) => SHELL.has(block.lang) && (section === undefined || block.section === section),
  );
}

/** The shell block of `file` that contains a command starting with `first` (throws when none does). */
export function shellBlockWith(file: string, first: string): DocBlock {
  const block = shellBlocks(file).find((b) => commandLines(b.text).some((command) => commandKey(command) === first));
  if (!block) throw new Error(`${file} shows no shell block with the command "${first}"`);
  return block;
}

/** The one command of `file`'s shell blocks whose first line is `first`, as written (all its lines). */
export function shellCommand(file: string, first: string): string {
  const block = shellBlockWith(file, first);
  return commandLines(block.text).find((command) => commandKey(command) === first) as string;
}

const COMMAND_SPAN =
  /^(make|npx|npm|node|kubectl|helm|curl|docker|k3d|apt-get|printf|scripts\/[\w-]+\.sh|node_modules\/\.bin\/\S+|[A-Z_]+=\S*)\s+\S/;

export interface InlineCommand {
  file: string;
  /** The heading the command sits under, without its `#`s. */
  section: string;
  text: string;
  line: number;
}

/** Inline code spans of a file that are commands (`make dev`, `npx node …`), whitespace collapsed. */
export function inlineCommands(file: string): InlineCommand[] {
  const lines = readFileSync(join(REPO, file), "utf8").split("\n");
  // Fenced blocks blanked, so their backticks are not read as spans and line numbers stay right.
  let inFence = false;
  const prose = lines
    .map((line) => {
      const fence = /^ *```\w*$/.test(line);
      if (fence) inFence = !inFence;
      return fence || inFence ? "" : line;
    })
    .join("\n");
  const found: InlineCommand[] = [];
  for (const match of prose.matchAll(/`([^`]+)`/g)) {
    // `\|` is how a table cell writes a pipe.
    const text = (match[1] as string).replace(/\s+/g, " ").replaceAll("\\|", "|").trim();
    if (!COMMAND_SPAN.test(text)) continue;
    const line = prose.slice(0, match.index).split("\n").length;
    const heading = prose
      .split("\n")
      .slice(0, line)
      .reverse()
      .find((l) => /^#{1,6} /.test(l));
    found.push({ file, section: heading?.replace(/^#+ /, "") ?? "", text, line });
  }
  return found;
}

/** The inline command of `file` written exactly so (throws when the page no longer shows it). */
export function inlineCommand(file: string, text: string): string {
  if (!inlineCommands(file).some((span) => span.text === text)) throw new Error(`${file} no longer shows \`${text}\``);
  return text;
}

/**
 * A shell script split into its commands: lines joined across `\`, open quotes, heredocs, trailing
 * `|`/`&&` and `do … done` / `then … fi`; blank and comment-only lines dropped.
 */
export function commandLines(script: string): string[] {
  const commands: string[] = [];
  let current: string[] = [];
  let quote: "'" | '"' | undefined;
  let heredoc: string | undefined;
  let depth = 0;
  for (const line of script.split("\n")) {
    if (heredoc !== undefined) {
      current.push(line);
      if (line.trim() === heredoc) heredoc = undefined;
    } else {
      if (current.length === 0 && (line.trim() === "" || line.trim().startsWith("#"))) continue;
      current.push(line);
      let code = "";
      for (let i = 0; i < line.length; i++) {
        const char = line[i] as string;
        if (quote) {
          if (char === quote) quote = undefined;
        } else if (char === "'" || char === '"') {
          quote = char;
        } else if (char === "#" && (i === 0 || /\s/.test(line[i - 1] as string))) {
          break;
        }
        code += quote ? " " : char;
      }
      const words = code.split(/[\s;]+/);
      depth +=
        words.filter((w) => w === "do" || w === "then").length - words.filter((w) => w === "done" || w === "fi").length;
      heredoc = /<<-?\s*'?(\w+)'?/.exec(code)?.[1];
      if (quote || heredoc !== undefined || depth > 0 || /(\\|\||&&)\s*$/.test(code)) continue;
    }
    if (heredoc === undefined && depth <= 0 && !quote) {
      commands.push(current.join("\n"));
      current = [];
    }
  }
  if (current.length > 0) commands.push(current.join("\n"));
  return commands;
}

/** How a command is named in a classification table: its first line, comment and `\` removed. */
export function commandKey(command: string): string {
  const first = command.split("\n")[0] as string;
  return first
    .replace(/\s+#\s.*$/, "")
    .replace(/\\$/, "")
    .trim();
}

export const onPath = (tool: string) => spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0;

/**
 * Environment in which `kubectl` and `helm` run as the docs write them: where one is not installed,
 * the wrapper the docs offer instead (scripts/kubectl.sh, scripts/cluster-helm.sh) stands in under its
 * name, from a directory put first on PATH.
 */
export function withDocumentedTools(env: NodeJS.ProcessEnv, shimDir: string, repo = REPO): NodeJS.ProcessEnv {
  const wrappers = { kubectl: "scripts/kubectl.sh", helm: "scripts/cluster-helm.sh" };
  const shimmed = { ...env };
  for (const [tool, wrapper] of Object.entries(wrappers)) {
    if (onPath(tool)) continue;
    writeFileSync(join(shimDir, tool), `#!/bin/sh\nexec ${join(repo, wrapper)} "$@"\n`, { mode: 0o755 });
    shimmed.PATH = `${shimDir}:${shimmed.PATH}`;
    shimmed[`AGENTPLANE_BUNDLED_${tool.toUpperCase()}`] = "1";
  }
  return shimmed;
}

/** A shell command that runs an ES module snippet from the docs with the project's Node. */
export function nodeSnippet(code: string): string {
  return `npx node --input-type=module -e '${code.replaceAll("'", "'\\''")}'`;
}

export interface ScriptResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a script with `bash -euo pipefail`; killed after `timeoutMs` (the docs' `until` loops poll forever). */
export function runScript(
  script: string,
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<ScriptResult> {
  return new Promise((done) => {
    const bash = spawn("bash", ["-euo", "pipefail", "-c", script], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ["ignore", "pipe", "pipe"],
      timeout: options.timeoutMs,
    });
    let stdout = "";
    let stderr = "";
    bash.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    bash.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    bash.on("exit", (code) => done({ code, stdout, stderr }));
  });
}

export interface Service {
  process: ChildProcess;
  /** Its exit code (or signal name), once it exited. */
  exited: Promise<number | string>;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** The first match of `pattern` in its output, once printed. */
  printed(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /**
   * Ctrl-C: SIGINT to its process group; resolves once the command exited, with its exit code (or
   * signal) and whether any process of the group was still running 15 s later (then killed).
   */
  stop(): Promise<{ status: number | string; left: boolean }>;
}

/** Starts a long-running command (a server the docs start) under bash, in its own process group. */
export function startService(command: string, options: { cwd: string; env?: NodeJS.ProcessEnv }): Service {
  const child = spawn("bash", ["-c", command], {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  const listeners = new Set<() => void>();
  const append = (chunk: Buffer) => {
    // Bounded: only the start of a server's output is looked at.
    if (output.length < 1_000_000) output += chunk;
    for (const listener of listeners) listener();
  };
  child.stdout?.on("data", append);
  child.stderr?.on("data", append);
  const exited = new Promise<number | string>((done) =>
    child.once("exit", (code, signal) => {
      for (const listener of listeners) listener();
      done(signal ?? (code as number));
    }),
  );
  return {
    process: child,
    exited,
    output: () => output,
    printed: (pattern, timeoutMs) =>
      new Promise((done, fail) => {
        const check = () => {
          const match = pattern.exec(output);
          if (match) {
            finish();
            done(match);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            finish();
            fail(
              new Error(
                `\`${command}\` exited (${child.exitCode ?? child.signalCode}) before printing ${pattern}:\n${output}`,
              ),
            );
          }
        };
        const timer = setTimeout(() => {
          finish();
          fail(new Error(`\`${command}\` printed no ${pattern} within ${timeoutMs} ms:\n${output}`));
        }, timeoutMs);
        const finish = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      }),
    stop: async () => {
      const group = -(child.pid as number);
      const groupAlive = () => {
        try {
          process.kill(group, 0);
          return true;
        } catch {
          return false;
        }
      };
      // What Ctrl-C does: SIGINT to every process of the command's group (make, npx, the server).
      if (groupAlive()) process.kill(group, "SIGINT");
      const status = await exited;
      const deadline = Date.now() + 15_000;
      while (groupAlive() && Date.now() < deadline) await new Promise((wait) => setTimeout(wait, 100));
      const left = groupAlive();
      if (left) process.kill(group, "SIGKILL");
      return { status, left };
    },
  };
}

/**
 * A fresh working copy of the repository at HEAD (`git archive`, as a clone would have it: no `dist/`,
 * nothing uncommitted), with the installed dependencies hard-linked in so `make` finds them current.
 */
export function workingCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), "agentplane-copy-"));
  execFileSync("sh", ["-c", `git -C "${REPO}" archive HEAD | tar -x -C "${dir}"`]);
  for (const modules of [
    "node_modules",
    ...["agent-server", "control-plane", "operator", "common", "crds"].map((w) => `${w}/node_modules`),
  ]) {
    if (existsSync(join(REPO, modules))) execFileSync("cp", ["-al", join(REPO, modules), join(dir, modules)]);
  }
  // make's install stamp: a file of its own (a link would share its mtime with the checkout's), copied
  // last, so it is newer than every package.json and `make install` has nothing to do.
  const stamp = join(dir, "node_modules/.package-lock.json");
  rmSync(stamp);
  copyFileSync(join(REPO, "node_modules/.package-lock.json"), stamp);
  return dir;
}

/** Programs the lines `make -n` prints would start (shell builtins and conditions left out). */
export function recipePrograms(plan: string): string[] {
  const builtins = new Set([
    "command",
    "if",
    "[",
    "{",
    "echo",
    "exit",
    "then",
    "else",
    "fi",
    "cd",
    "test",
    "true",
    ":",
  ]);
  return plan
    .split("\n")
    .filter((line) => !/^make(\[\d+\])?:/.test(line))
    .map((line) => line.trim().split(/\s+/))
    .map((words) => words.filter((word) => !/^[A-Z_]+=/.test(word)))
    .map((words) => (words[0] === "exec" || words[0] === "env" ? words.slice(1) : words))
    .map((words) => words[0] ?? "")
    .filter((program) => program !== "" && !builtins.has(program));
}
