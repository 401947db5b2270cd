import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  docBlocks,
  inlineCommand,
  nodeSnippet,
  onPath,
  REPO,
  runScript,
  shellBlocks,
  shellBlockWith,
  withDocumentedTools,
} from "../testing/doc-commands.ts";
import { eventually } from "../testing/kubelet/cluster.ts";
import { hasRedisServerBinary } from "../testing/redis-server.ts";

const SECTION = "Run the whole platform on your laptop";

const missing = [
  hasRedisServerBinary() ? undefined : "redis-server",
  ...["curl", "jq", "make"].filter((tool) => !onPath(tool)),
].filter(Boolean);

/** Pids of every process below `pid`, from /proc (Linux). */
function descendants(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // Field 4 (ppid) follows the command name, which is in parentheses and may hold spaces.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // exited while listing
    }
  }
  const found: number[] = [];
  const walk = (parent: number) => {
    for (const [child, ppid] of parents) {
      if (ppid === parent) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return found;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    // A zombie still answers kill(0) until reaped; it runs nothing.
    return !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ");
  } catch {
    return false;
  }
};

describe.skipIf(missing.length > 0 || process.platform !== "linux")(
  `make platform and the docs' quick start${missing.length ? ` (skipped: needs ${missing.join(", ")})` : ""}`,
  () => {
    const dir = mkdtempSync(join(tmpdir(), "agentplane-platform-"));
    let platform: ChildProcess;
    let output = "";
    let env: Record<string, string> = {};
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`${env.CONTROL_PLANE_URL}${path}`, {
        method,
        headers: { "x-api-key": env.CONTROL_PLANE_API_KEY as string, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });

    beforeAll(async () => {
      platform = spawn("make", ["platform", `PLATFORM_DIR=${dir}`, "CONTROL_PLANE_PORT=0"], {
        cwd: REPO,
        stdio: ["ignore", "pipe", "pipe"],
      });
      platform.stdout?.on("data", (chunk) => {
        output += chunk;
      });
      platform.stderr?.on("data", (chunk) => {
        output += chunk;
      });
      await eventually(
        () => {
          if (platform.exitCode !== null) throw new Error(`make platform exited ${platform.exitCode}: ${output}`);
          return existsSync(join(dir, "env"));
        },
        120_000,
        "make platform to write its env file",
      );
      env = Object.fromEntries(
        readFileSync(join(dir, "env"), "utf8")
          .trim()
          .split("\n")
          .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
      );
    }, 150_000);

    afterAll(async () => {
      // After a failed test: make passes SIGTERM on, so nothing is left behind (SIGKILL would orphan it all).
      if (platform.exitCode === null && platform.signalCode === null) {
        const exited = new Promise((done) => platform.once("exit", done));
        platform.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    }, 30_000);

    it("prints the URLs, key and kubeconfig and writes them to <dir>/env", async () => {
      expect(Object.keys(env)).toEqual(["CONTROL_PLANE_URL", "CONTROL_PLANE_API_KEY", "KUBECONFIG", "EXAMPLE_IMAGE"]);
      expect(output).toContain(`${env.CONTROL_PLANE_URL}/docs`);
      expect(output).toContain(env.CONTROL_PLANE_API_KEY);
      expect(output).toContain(env.KUBECONFIG);
      expect(output).toContain(env.EXAMPLE_IMAGE);
      expect((await fetch(`${env.CONTROL_PLANE_URL}/docs`)).status).toBe(200);
      expect((await fetch(`${env.CONTROL_PLANE_URL}/v2/deployments`)).status).toBe(401);
      expect((await api("GET", "/v2/deployments")).status).toBe(200);
    });

    it("runs every command of the docs section as written", async () => {
      const blocks = shellBlocks("docs/control-plane.md", SECTION)
        .map((block) => block.text)
        .filter((block) => !block.startsWith("make platform"));
      expect(blocks.length).toBeGreaterThanOrEqual(4);
      const shims = mkdtempSync(join(dir, "bin-"));
      const script = blocks
        .map((block, i) => `echo "--- block ${i}"\n${block}`)
        .join("\n")
        // The docs' `.platform/` is this test's own directory (a developer's platform may be running).
        .replaceAll(".platform/", `${dir}/`);
      // The docs' `until` loops poll forever: ended here, before the test's own timeout.
      const result = await runScript(script, {
        cwd: REPO,
        env: withDocumentedTools(process.env, shims),
        timeoutMs: 280_000,
      });
      expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
      // The SDK's run went through the deployment's secret (ECHO_MODEL_PREFIX) to the agent server.
      expect(result.stdout).toContain("Echo: hello");
      // `kubectl get agentdeployments -A`: the printer columns of the custom resource.
      expect(result.stdout).toMatch(/NAME\s+REVISION\s+STATUS/);
      // `kubectl logs deployment/…`: the agent server's start-up lines, through pods/log.
      expect(result.stdout).toMatch(/Agent server: http:\/\/127\.0\.0\.1:\d+/);
      // `kubectl describe agentdeployments`, and `kubectl create` of built-ins (protobuf bodies).
      expect(result.stdout).toMatch(/^Kind:\s+AgentDeployment$/m);
      expect(result.stdout).toContain("namespace/scratch created");
      expect(result.stdout).toContain("secret/my-keys created");
      expect(result.stdout).toMatch(/OPENAI_API_KEY:\s+10 bytes/);
      const { id } = JSON.parse(readFileSync(join(dir, "deployment.json"), "utf8"));
      expect((await api("GET", `/v2/deployments/${id}`)).status).toBe(404);
    }, 300_000);

    it("runs install.md's deploy steps against the platform", async () => {
      // The reader's URL, workspace and image are the platform's: its control plane, the workspace its
      // API key covers, the image its kubelet runs.
      const [grant] = readFileSync(join(dir, "api-keys.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line));
      const workspace = grant.workspace_ids[0] as string;
      const create = shellBlockWith("docs/install.md", "export AGENTPLANE_URL=https://agentplane.example.com").text;
      const wait = shellBlockWith(
        "docs/install.md",
        "ID=$(jq -r .id deployment.json); REV=$(jq -r .latest_revision_id deployment.json)",
      ).text;
      const filled = [
        create
          .replace("https://agentplane.example.com", env.CONTROL_PLANE_URL as string)
          .replace("0b7a6a3e-93b5-4a77-8b4e-2f4f2b7c9c55", workspace)
          .replace("registry.example.com/me/my-agent:1", env.EXAMPLE_IMAGE as string),
        wait,
        inlineCommand("docs/install.md", "kubectl get agentdeployments -n agentplane-$TENANT"),
        // The Service `kubectl port-forward` names (the test API server forwards no ports).
        inlineCommand("docs/install.md", "kubectl port-forward -n agentplane-$TENANT svc/agent-$ID 8000")
          .replace("port-forward", "get")
          .replace(/ 8000$/, ""),
        'echo "ID=$ID URL=$URL"',
      ];
      expect(filled[0]).toContain(env.CONTROL_PLANE_URL);
      expect(filled[0]).toContain(env.EXAMPLE_IMAGE);
      const cwd = mkdtempSync(join(dir, "install-steps-"));
      const shims = mkdtempSync(join(dir, "bin-"));
      const tools = withDocumentedTools(
        { ...process.env, KUBECONFIG: env.KUBECONFIG, AGENTPLANE_API_KEY: env.CONTROL_PLANE_API_KEY },
        shims,
      );
      const result = await runScript(filled.join("\n"), { cwd, env: tools, timeoutMs: 150_000 });
      expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
      expect(result.stdout).toMatch(/NAME\s+REVISION\s+STATUS/);
      const [, id, url] = /ID=(\S+) URL=(\S+)/.exec(result.stdout) as RegExpExecArray;
      expect(result.stdout).toMatch(new RegExp(`^agent-${id}\\s`, "m"));
      // Step 4: the SDK with the control plane's key.
      const snippet = docBlocks("docs/install.md").find((block) => block.lang === "ts")?.text as string;
      const sdk = await runScript(nodeSnippet(`${snippet}\nconsole.log(result.messages.at(-1).content);`), {
        cwd: REPO,
        env: { ...tools, URL: url },
        timeoutMs: 60_000,
      });
      expect(sdk.code, sdk.stderr).toBe(0);
      expect(sdk.stdout).toContain("hello");
      expect((await api("DELETE", `/v2/deployments/${id}`)).status).toBe(204);
    }, 240_000);

    it("SIGTERM stops every process it started", async () => {
      // A running deployment first, so that agent-server processes are among those to stop.
      const created = await api("POST", "/v2/deployments", {
        name: "before-sigterm",
        source: "external_docker",
        source_config: { resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.5, memory_mb: 256 } },
        source_revision_config: { image_uri: env.EXAMPLE_IMAGE },
        secrets: [],
      });
      expect(created.status).toBe(201);
      const { id, latest_revision_id: revision } = (await created.json()) as { id: string; latest_revision_id: string };
      await eventually(
        async () =>
          ((await (await api("GET", `/v2/deployments/${id}/revisions/${revision}`)).json()) as { status: string })
            .status === "DEPLOYED",
        120_000,
        "the deployment to be DEPLOYED",
      );
      const pid = platform.pid as number;
      const children = descendants(pid);
      const commands = children.map((child) => readFileSync(`/proc/${child}/cmdline`, "utf8").replaceAll("\0", " "));
      expect(commands.some((c) => c.includes("redis-server"))).toBe(true);
      expect(commands.some((c) => c.includes("agent-server/src/cli/main.ts serve"))).toBe(true);
      const exited = new Promise<string>((done) => platform.once("exit", (code, signal) => done(signal ?? `${code}`)));
      platform.kill("SIGTERM");
      // make passes SIGTERM on to the platform, waits for it, then dies of the same signal.
      expect(["0", "SIGTERM"]).toContain(await exited);
      await eventually(() => children.every((child) => !alive(child)), 15_000, "every child process to exit");
      expect(existsSync(join(dir, "env"))).toBe(false);
      // `execFileSync` throws if nothing listens any more, which is what is expected.
      expect(() => execFileSync("curl", ["-fsS", `${env.CONTROL_PLANE_URL}/ok`], { stdio: "ignore" })).toThrow();
    }, 180_000);
  },
);
