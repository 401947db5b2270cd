import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { hashApiKey } from "@agentplane/common";
import { loadCrdManifests } from "@agentplane/crds";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startKubeApiServer } from "../../../testing/kube-apiserver/server.ts";
import { uniquePrefix } from "../../../testing/redis.ts";
import { freePort } from "../../../testing/redis-server.ts";
import { type AssembledStage, ImageAssembler, type RunContext } from "./testing/assemble.ts";
import {
  hostPath,
  installLockedModules,
  linkDeclaredModules,
  pruneDevModules,
  relocateConfig,
  resolveCommand,
  snapshotTree,
  startNode,
  waitForOk,
} from "./testing/local-image.ts";

/**
 * docker/Dockerfile checked without a Docker engine: every stage is assembled into a folder (COPY
 * exactly as Docker does, including the .dockerignore), `npm run build` really runs on the copied
 * sources, `npm ci` is this checkout's node_modules hard-linked in and `npm prune --omit=dev` removes
 * what the lockfile marks dev-only, and the entry points are started with node. Not checkable here:
 * the node:24 base layers and the apt-get install of tini (recorded in `unchecked`).
 */

const REPO = resolve(import.meta.dirname, "../../..");
const DOCKERFILE = join(REPO, "docker/Dockerfile");
const BIN_PATH = `${join(REPO, "node_modules/.bin")}:${process.env.PATH}`;

function runRepoStep(context: RunContext): void {
  for (const step of context.command.split("&&").map((part) => part.trim())) {
    if (step.startsWith("apt-get ") || step.startsWith("rm -rf /var/lib/apt/lists")) {
      context.skip("Debian packages come with the base image");
    } else if (/^npm ci\b/.test(step)) {
      installLockedModules(context.hostWorkdir, REPO);
    } else if (/^npm prune --omit=dev\b/.test(step)) {
      pruneDevModules(context.hostWorkdir);
    } else if (step === "npm run build") {
      const build = spawnSync("npm", ["run", "build"], {
        cwd: context.hostWorkdir,
        env: { ...process.env, PATH: BIN_PATH },
        encoding: "utf8",
      });
      if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stdout}\n${build.stderr}`);
    } else {
      throw new Error(`no local equivalent for RUN step: ${step}`);
    }
  }
}

let workDir: string;
let assembler: ImageAssembler;

beforeAll(() => {
  // `npm ci` is reproduced with hard links, which need the checkout's filesystem (.agentplane/ is git-ignored).
  const sameDevice = statSync(tmpdir()).dev === statSync(REPO).dev;
  const parent = sameDevice ? tmpdir() : join(REPO, ".agentplane");
  mkdirSync(parent, { recursive: true });
  workDir = mkdtempSync(join(parent, "images-"));
  assembler = new ImageAssembler({
    dockerfile: readFileSync(DOCKERFILE, "utf8"),
    contextDir: REPO,
    dockerignore: readFileSync(`${DOCKERFILE}.dockerignore`, "utf8"),
    workDir,
    run: runRepoStep,
  });
  for (const target of assembler.stageNames()) assembler.assemble(target);
}, 600_000);

afterAll(() => {
  if (workDir) rmSync(workDir, { recursive: true, force: true });
}, 120_000);

describe("docker/Dockerfile", () => {
  it("has the build, runtime and two image targets on Node 24 slim", () => {
    expect(assembler.stageNames()).toEqual(["build", "runtime", "agent-server", "platform"]);
    const build = assembler.assemble("build");
    expect(build.baseImage).toMatch(/^node:24-(bookworm-)?slim$/);
  });

  it("keeps dev dependencies, tests and local build output out of the runtime image", () => {
    const runtime = assembler.assemble("runtime");
    const modules = join(runtime.root, "opt/agentplane/node_modules");
    for (const devOnly of ["vitest", "@biomejs/biome", "kubernetes-models", "node"]) {
      expect(existsSync(join(modules, devOnly)), devOnly).toBe(false);
    }
    // `typescript` is not in the list: the schema extractor (@langchain/langgraph-api) needs it at
    // run time, and its @typescript/vfs peer makes the root copy a production package too.
    for (const production of ["express", "zod", "pino", "@agentplane/common"]) {
      expect(existsSync(join(modules, production)), production).toBe(true);
    }
    expect(existsSync(join(runtime.root, "opt/agentplane/common/dist/index.js"))).toBe(true);
    expect(existsSync(join(runtime.root, "opt/agentplane/common/src/route.test.ts"))).toBe(false);
    expect(runtime.config.entrypoint).toEqual(["/usr/bin/tini", "--"]);
    expect(runtime.config.env.NODE_ENV).toBe("production");
    expect(runtime.unchecked.join("\n")).toMatch(/apt-get install -y --no-install-recommends tini/);
  });

  it("agent-server: non-root, port 8000, health check on /ok, wrapper on PATH", () => {
    const image = assembler.assemble("agent-server");
    expect(image.config.user).toBe("1000:1000");
    expect(image.config.expose).toEqual(["8000"]);
    expect(image.config.env).toMatchObject({ PORT: "8000", HOST: "0.0.0.0" });
    expect(image.config.healthcheck).toMatch(/\/ok/);
    expect(existsSync(join(image.root, "opt/agentplane/control-plane"))).toBe(false);
    expect(existsSync(join(image.root, "opt/agentplane/operator"))).toBe(false);
    const wrapper = join(image.root, "usr/local/bin/agent-server");
    expect(statSync(wrapper).mode & 0o111).not.toBe(0);
    expect(readFileSync(wrapper, "utf8").split("\n")[0]).toBe("#!/bin/sh");
  });

  it("platform: control-plane and operator entry points, non-root", () => {
    const image = assembler.assemble("platform");
    expect(image.config.user).toBe("1000:1000");
    expect(image.config.cmd).toEqual(["control-plane"]);
    expect(existsSync(join(image.root, "opt/agentplane/agent-server"))).toBe(false);
    expect(existsSync(join(image.root, "opt/agentplane/crds/agentdeployments.yaml"))).toBe(true);
    for (const program of ["control-plane", "operator"]) {
      expect(resolveCommand(image, [program]).script).toMatch(new RegExp(`/opt/agentplane/${program}/dist/main\\.js$`));
    }
  });
});

describe("images started from their assembled trees", () => {
  const redisUrl = () => inject("redisUrl");

  async function serveAndCheck(image: AssembledStage, command: { script: string; args: string[] }) {
    const before = snapshotTree(image.root);
    const tmp = mkdtempSync(join(workDir, "tmp-"));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const started = startNode(image, command, {
      PORT: String(port),
      HOST: "127.0.0.1",
      REDIS_URI: redisUrl(),
      REDIS_PREFIX: uniquePrefix(),
      TMPDIR: tmp,
      HOME: tmp,
    });
    try {
      await waitForOk(`${url}/ok`, started);
      const client = new Client({ apiUrl: url });
      const assistants = await client.assistants.search({ graphId: "agent" });
      expect(assistants.length).toBeGreaterThan(0);
      const thread = await client.threads.create();
      const result = (await client.runs.wait(thread.thread_id, "agent", {
        input: { messages: [{ role: "human", content: "hello image" }] },
      })) as { messages: { content: string }[] };
      expect(result.messages.at(-1)?.content).toContain("hello image");
      // Read-only root filesystem: the server wrote nothing inside the image tree.
      expect(snapshotTree(image.root)).toEqual(before);
    } finally {
      // SIGTERM (what tini forwards) drains and exits cleanly.
      expect(await started.stop()).toBe(0);
    }
  }

  it("the agent-server base image serves the example graph with `serve`", async () => {
    const image = assembler.assemble("agent-server");
    await serveAndCheck(image, resolveCommand(image));
  }, 120_000);

  it("a graph image generated by `agent-server dockerfile` builds on it and serves the project", async () => {
    const base = assembler.assemble("agent-server");
    const project = join(workDir, "user-project");
    cpSync(join(REPO, "agent-server/example"), project, { recursive: true });
    const versions = JSON.parse(readFileSync(join(REPO, "agent-server/package.json"), "utf8")).dependencies;
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({
        name: "my-agent",
        private: true,
        type: "module",
        dependencies: {
          "@langchain/langgraph": versions["@langchain/langgraph"],
          "@langchain/core": versions["@langchain/core"],
        },
      }),
    );
    writeFileSync(join(project, "package-lock.json"), "{}");
    // A secret next to the project, as `langgraph dev` users keep one: it must stay out of the image.
    writeFileSync(join(project, ".env"), "OPENAI_API_KEY=sk-secret\n");
    // `agent-server dockerfile` as built into the base image, printed (`> Dockerfile`).
    const cli = resolveCommand(base, [
      "agent-server",
      "dockerfile",
      "-c",
      join(project, "langgraph.json"),
      "--base-image",
      "agentplane/agent-server:test",
    ]);
    const generated = spawnSync(process.execPath, [cli.script, ...cli.args], { encoding: "utf8" });
    expect(generated.stderr).toBe(`wrote ${join(project, ".dockerignore")}\n`);
    expect(generated.status).toBe(0);
    const userImage = new ImageAssembler({
      dockerfile: generated.stdout,
      contextDir: project,
      // What a builder reads from the context: the file `dockerfile` wrote there.
      dockerignore: readFileSync(join(project, ".dockerignore"), "utf8"),
      workDir: join(workDir, "user-image"),
      images: { "agentplane/agent-server:test": base },
      run: (context) => {
        if (context.command !== "NODE_ENV=development npm ci --no-audit --no-fund")
          throw new Error(`unexpected RUN ${context.command}`);
        linkDeclaredModules(context.hostWorkdir, REPO);
      },
    }).assemble();
    expect(existsSync(hostPath(userImage, "/deps/app/.env"))).toBe(false);
    expect(existsSync(hostPath(userImage, "/deps/app/langgraph.json"))).toBe(true);
    expect(userImage.config.user).toBe("1000:1000");
    expect(userImage.config.cmd).toEqual(["agent-server", "serve", "--config", "/deps/langgraph.json"]);
    const command = resolveCommand(userImage);
    const baked = relocateConfig(userImage, hostPath(userImage, "/deps/langgraph.json"), join(workDir, "baked.json"));
    await serveAndCheck(userImage, {
      ...command,
      args: command.args.map((arg) => (arg.endsWith("/deps/langgraph.json") ? baked : arg)),
    });
  }, 120_000);

  it("the platform image runs the control plane and the operator against a Kubernetes API", async () => {
    const image = assembler.assemble("platform");
    const kube = await startKubeApiServer({ crds: loadCrdManifests() });
    const tmp = mkdtempSync(join(workDir, "platform-tmp-"));
    const grants = join(tmp, "api-keys.jsonl");
    writeFileSync(
      grants,
      `${JSON.stringify({ hash: hashApiKey("image-test"), organization_id: randomUUID(), workspace_ids: [randomUUID()] })}\n`,
    );
    const before = snapshotTree(image.root);
    const [controlPlanePort, operatorPort] = [await freePort(), await freePort()];
    const controlPlane = startNode(image, resolveCommand(image), {
      PORT: String(controlPlanePort),
      HOST: "127.0.0.1",
      KUBECONFIG: kube.kubeconfigPath,
      CONTROL_PLANE_NAMESPACE_LAYOUT: "shared",
      CONTROL_PLANE_NAMESPACES: "default",
      CONTROL_PLANE_API_KEYS_FILE: grants,
      TMPDIR: tmp,
      HOME: tmp,
    });
    const operator = startNode(image, resolveCommand(image, ["operator"]), {
      KUBECONFIG: kube.kubeconfigPath,
      HEALTH_PORT: String(operatorPort),
      HEALTH_HOST: "127.0.0.1",
      OPERATOR_NAMESPACE: "default",
      TMPDIR: tmp,
      HOME: tmp,
    });
    try {
      await waitForOk(`http://127.0.0.1:${controlPlanePort}/ok`, controlPlane);
      const unauthenticated = await fetch(`http://127.0.0.1:${controlPlanePort}/v2/deployments`);
      expect(unauthenticated.status).toBe(401);
      await waitForOk(`http://127.0.0.1:${operatorPort}/healthz`, operator);
      await waitForOk(`http://127.0.0.1:${operatorPort}/readyz`, operator);
      expect(await (await fetch(`http://127.0.0.1:${operatorPort}/metrics`)).text()).toMatch(/^# HELP/m);
      expect(snapshotTree(image.root)).toEqual(before);
    } finally {
      expect(await controlPlane.stop()).toBe(0);
      expect(await operator.stop()).toBe(0);
      await kube.close();
    }
  }, 120_000);
});
