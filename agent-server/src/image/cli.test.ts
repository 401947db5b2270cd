import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkDocker, DockerUnavailableError, dockerBuildArgs } from "./build.ts";
import { DEFAULT_BASE_IMAGE, runImageCommand } from "./cli.ts";
import { generateDockerignore } from "./dockerfile.ts";

let dir: string;

const dockerProbe = spawnSync("docker", ["version", "--format", "{{.Server.Version}}"], { encoding: "utf8" });
const dockerCliWithoutEngine = !dockerProbe.error && dockerProbe.status !== 0;

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t) } };
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "image-cli-"));
  mkdirSync(join(dir, "src"));
  writeFileSync(
    join(dir, "langgraph.json"),
    JSON.stringify({ graphs: { agent: "./src/agent.ts:graph" }, env: ".env" }),
  );
  writeFileSync(join(dir, "package.json"), JSON.stringify({ dependencies: { "@langchain/langgraph": "^1" } }));
  writeFileSync(join(dir, "package-lock.json"), "{}");
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("agent-server dockerfile", () => {
  it("prints the Dockerfile for a project without reading its (git-ignored) env file", async () => {
    const { out, io } = capture();
    expect(await runImageCommand("dockerfile", ["-c", join(dir, "langgraph.json")], io)).toBe(0);
    expect(out.join("")).toContain(`FROM ${DEFAULT_BASE_IMAGE}\n`);
    expect(out.join("")).not.toContain(".env");
  });

  it("writes the Dockerfile and a .dockerignore; an existing .dockerignore gets the missing defaults", async () => {
    const { err, io } = capture();
    const output = join(dir, "Dockerfile");
    const args = ["-c", join(dir, "langgraph.json"), "-o", output, "--base-image", "registry.example/base:1"];
    expect(await runImageCommand("dockerfile", args, io)).toBe(0);
    expect(readFileSync(output, "utf8")).toContain("FROM registry.example/base:1\n");
    expect(readFileSync(join(dir, ".dockerignore"), "utf8")).toBe(generateDockerignore());
    writeFileSync(join(dir, ".dockerignore"), "mine\nnode_modules");
    expect(await runImageCommand("dockerfile", args, io)).toBe(0);
    expect(readFileSync(join(dir, ".dockerignore"), "utf8")).toBe(
      "mine\nnode_modules\n# added by agent-server dockerfile\n.git\n.env\n.env.*\n!.env.example\n.langgraph_api\n*.log\n",
    );
    expect(err.join("")).toContain(
      `added .git, .env, .env.*, !.env.example, .langgraph_api, *.log to ${dir}/.dockerignore`,
    );
    // Complete now: a third run leaves it as it is.
    const before = readFileSync(join(dir, ".dockerignore"), "utf8");
    expect(await runImageCommand("dockerfile", args, io)).toBe(0);
    expect(readFileSync(join(dir, ".dockerignore"), "utf8")).toBe(before);
  });

  it("writes the .dockerignore into the build context (the project) whichever way the Dockerfile is saved", async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), "image-cli-out-"));
    try {
      // `agent-server dockerfile > Dockerfile`: the Dockerfile goes to stdout.
      const printed = capture();
      expect(await runImageCommand("dockerfile", ["-c", join(dir, "langgraph.json")], printed.io)).toBe(0);
      expect(printed.out.join("")).toContain("COPY . .");
      expect(readFileSync(join(dir, ".dockerignore"), "utf8")).toContain(".env\n");
      rmSync(join(dir, ".dockerignore"));
      // `-o` into another folder (e.g. a CI workspace): still the project's.
      const written = capture();
      const args = ["-c", join(dir, "langgraph.json"), "-o", join(elsewhere, "Dockerfile")];
      expect(await runImageCommand("dockerfile", args, written.io)).toBe(0);
      expect(readFileSync(join(dir, ".dockerignore"), "utf8")).toContain("node_modules\n");
      expect(existsSync(join(elsewhere, ".dockerignore"))).toBe(false);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it.each([
    [["-c", "/nonexistent/langgraph.json"], /cannot read config/],
    [["--bogus"], /Unknown option '--bogus'/],
    [["extra"], /unexpected argument "extra"/],
  ])("exits 2 with a clear message for %j", async (args, message) => {
    const { err, io } = capture();
    expect(await runImageCommand("dockerfile", args, io)).toBe(2);
    expect(err.join("")).toMatch(message);
  });

  it.each([
    [{ graphs: {} }, /graphs must name at least one graph/],
    [{ graphs: { a: 3 } }, /graphs\.a/],
    [{ nographs: true }, /graphs/],
  ])("refuses the config %j", async (config, message) => {
    writeFileSync(join(dir, "langgraph.json"), JSON.stringify(config));
    const { err, io } = capture();
    expect(await runImageCommand("dockerfile", ["-c", join(dir, "langgraph.json")], io)).toBe(2);
    expect(err.join("")).toMatch(message);
  });

  it("refuses a project without package.json", async () => {
    rmSync(join(dir, "package.json"));
    const { err, io } = capture();
    expect(await runImageCommand("dockerfile", ["-c", join(dir, "langgraph.json")], io)).toBe(2);
    expect(err.join("")).toMatch(/no package\.json next to/);
    expect(existsSync(join(dir, "Dockerfile"))).toBe(false);
  });
});

describe("agent-server build", () => {
  it("requires a tag", async () => {
    const { err, io } = capture();
    expect(await runImageCommand("build", ["-c", join(dir, "langgraph.json")], io)).toBe(2);
    expect(err.join("")).toMatch(/needs an image tag/);
  });

  it("says so clearly when the Docker CLI is missing", () => {
    expect(() => checkDocker(join(dir, "no-docker-here"))).toThrow(DockerUnavailableError);
    expect(() => checkDocker(join(dir, "no-docker-here"))).toThrow(/was not found.*agent-server dockerfile -o/);
  });

  // Needs a Docker CLI without a running engine, as on the machines this suite was written on.
  it.runIf(dockerCliWithoutEngine)("says so clearly when the Docker engine is unreachable", () => {
    expect(() => checkDocker("docker")).toThrow(/Docker engine is not reachable \(.+\); start it, or run/);
  });

  it("passes tag, generated Dockerfile and extra arguments to docker build", () => {
    expect(dockerBuildArgs("me/agent:1", "/tmp/x/Dockerfile", "/proj", ["--platform", "linux/amd64"])).toEqual([
      "build",
      "--tag",
      "me/agent:1",
      "--file",
      "/tmp/x/Dockerfile",
      "--platform",
      "linux/amd64",
      "/proj",
    ]);
  });
});

describe("the agent-server CLI", () => {
  it("dispatches dockerfile to the image commands", () => {
    const main = join(import.meta.dirname, "../cli/main.ts");
    const run = spawnSync(
      process.execPath,
      ["--conditions=source", main, "dockerfile", "-c", join(dir, "langgraph.json")],
      {
        encoding: "utf8",
      },
    );
    expect(run.stderr).toBe(`wrote ${join(dir, ".dockerignore")}\n`);
    expect(run.stdout).toContain(`FROM ${DEFAULT_BASE_IMAGE}\n`);
  });
});
