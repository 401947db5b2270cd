import { posix } from "node:path";

/**
 * Reading a Dockerfile as the image assembler (assemble.ts) needs it: stages and their
 * instructions (line continuations, comments, heredocs, global ARGs in FROM), `.dockerignore`
 * rules, and the argument forms of ENV, CMD/ENTRYPOINT and COPY sources.
 */

export interface Instruction {
  keyword: string;
  args: string;
  /** Body of a `<<DELIMITER` heredoc. */
  heredoc?: string;
}

export interface Stage {
  name: string;
  /** The image or earlier stage it starts from, ARGs substituted. */
  from: string;
  instructions: Instruction[];
}

function logicalLines(text: string): Instruction[] {
  const lines = text.split("\n");
  const instructions: Instruction[] = [];
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i] ?? "";
    if (/^\s*(#.*)?$/.test(line)) continue;
    while (line.endsWith("\\") && i + 1 < lines.length) {
      line = line.slice(0, -1);
      do i++;
      while (/^\s*#/.test(lines[i] ?? ""));
      line += ` ${(lines[i] ?? "").trim()}`;
    }
    const match = /^\s*(\w+)\s+(.*)$/.exec(line);
    if (!match) throw new Error(`cannot parse Dockerfile line: ${line}`);
    const instruction: Instruction = { keyword: match[1]!.toUpperCase(), args: match[2]!.trim() };
    const heredoc = /<<-?"?(\w+)"?/.exec(instruction.args);
    if (heredoc) {
      const end = lines.indexOf(heredoc[1]!, i + 1);
      if (end < 0) throw new Error(`unterminated heredoc ${heredoc[1]}`);
      instruction.heredoc = `${lines.slice(i + 1, end).join("\n")}\n`;
      i = end;
    }
    instructions.push(instruction);
  }
  return instructions;
}

export function substitute(value: string, args: Record<string, string>): string {
  return value.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, a, b) => args[a ?? b] ?? whole);
}

export function parseDockerfile(text: string): Stage[] {
  const globalArgs: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const instruction of logicalLines(text)) {
    if (instruction.keyword === "ARG" && stages.length === 0) {
      const [name, value = ""] = instruction.args.split("=", 2);
      globalArgs[name!] = value;
    } else if (instruction.keyword === "FROM") {
      const [image, as, name] = substitute(instruction.args, globalArgs).split(/\s+/);
      stages.push({
        name: as?.toUpperCase() === "AS" && name ? name : String(stages.length),
        from: image!,
        instructions: [],
      });
    } else {
      const stage = stages.at(-1);
      if (!stage) throw new Error(`${instruction.keyword} before FROM`);
      stage.instructions.push(instruction);
    }
  }
  return stages;
}

/** Docker's `.dockerignore` rules: last match wins, and a match on a parent folder covers its contents. */
export function dockerignoreMatcher(text: string): (path: string) => boolean {
  const rules = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"))
    .map((line) => {
      const negate = line.startsWith("!");
      const pattern = posix.normalize(line.slice(negate ? 1 : 0)).replace(/^\/+/, "");
      const source = pattern
        .split("/")
        .map((part) =>
          part === "**"
            ? "\u0000"
            : part
                .replace(/[.+^${}()|[\]\\]/g, "\\$&")
                .replace(/\*/g, "[^/]*")
                .replace(/\?/g, "[^/]"),
        )
        .join("/")
        .replace(/\u0000\//g, "(?:.*/)?")
        .replace(/\u0000/g, ".*");
      return { negate, regex: new RegExp(`^${source}$`) };
    });
  return (path) => {
    const parts = path.split("/");
    const candidates = parts.map((_, index) => parts.slice(0, index + 1).join("/"));
    let ignored = false;
    for (const rule of rules) {
      if (candidates.some((candidate) => rule.regex.test(candidate))) ignored = !rule.negate;
    }
    return ignored;
  };
}

export function jsonOrShell(args: string): string[] {
  return args.startsWith("[") ? (JSON.parse(args) as string[]) : ["/bin/sh", "-c", args];
}

export function parseEnv(args: string): Record<string, string> {
  if (!args.includes("=")) {
    const [key, ...rest] = args.split(/\s+/);
    return { [key!]: rest.join(" ") };
  }
  const env: Record<string, string> = {};
  for (const match of args.matchAll(/(\w+)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    env[match[1]!] = match[2]!.startsWith('"') ? (JSON.parse(match[2]!) as string) : match[2]!;
  }
  return env;
}

export function globToRegex(glob: string): RegExp {
  return new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replace(/\*/g, "[^/]*")
      .replace(/\?/g, ".")}$`,
  );
}
