// Every command the README and its first-step pages show is either run here as written (in a fresh
// working copy, placeholders filled in) or, where it needs Docker, k3d or a real cluster, checked
// against the real tool; `PROOFS` says which for each. A command added to these pages fails the first
// test until it is classified. docs/testing.md#commands-in-the-docs lists what is only checked.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  commandKey,
  commandLines,
  docBlocks,
  inlineCommand,
  nodeSnippet,
  onPath,
  REPO,
  recipePrograms,
  runScript,
  type Service,
  shellBlocks,
  shellBlockWith,
  shellCommand,
  startService,
  withDocumentedTools,
  workingCopy,
} from "../testing/doc-commands.ts";
import { uniquePrefix } from "../testing/redis.ts";
import { freePort } from "../testing/redis-server.ts";
import { PROOFS, SECTIONS_RUN_WHOLE, shownCommands, T } from "./readme-commands.proofs.ts";

const dockerEngine = spawnSync("docker", ["version", "--format", "{{.Server.Version}}"]).status === 0;

/** `command` with each placeholder replaced; fails when the docs no longer show the placeholder. */
function fill(command: string, values: Record<string, string>): string {
  let filled = command;
  for (const [placeholder, value] of Object.entries(values)) {
    expect(filled, `the docs' command shows ${placeholder}`).toContain(placeholder);
    filled = filled.replaceAll(placeholder, value);
  }
  return filled;
}

it(T.classified, () => {
  const shown = shownCommands();
  const unclassified = shown.filter(({ key }) => !(key in PROOFS)).map(({ key, where }) => `${where}: ${key}`);
  expect(unclassified, "add each to PROOFS with the test that runs or checks it").toEqual([]);
  const keys = new Set(shown.map(({ key }) => key));
  expect(
    Object.keys(PROOFS).filter((key) => !keys.has(key)),
    "PROOFS entries no page shows",
  ).toEqual([]);
  for (const { section, file } of SECTIONS_RUN_WHOLE) expect(shellBlocks(file, section).length).toBeGreaterThan(0);
});

describe.skipIf(process.platform !== "linux" || !onPath("make") || !onPath("git"))(
  "the docs' commands in a fresh working copy",
  () => {
    let copy: string;
    let home: string;
    let env: NodeJS.ProcessEnv;
    let dev: Service;
    let devUrl: Promise<string>;
    const services: Service[] = [];

    beforeAll(async () => {
      copy = workingCopy();
      // `~` in the docs' commands is this directory.
      home = mkdtempSync(join(tmpdir(), "docs-home-"));
      const shims = join(home, ".shims");
      mkdirSync(shims);
      env = withDocumentedTools({ ...process.env, HOME: home }, shims, copy);
      // Started first: it builds the copy (the slowest step), while the tests that need no build run.
      const port = await freePort();
      dev = startService(`make dev PORT=${port}`, { cwd: copy, env });
      services.push(dev);
      devUrl = dev.printed(/Agent server: (http:\/\/\S+)/, 240_000).then((match) => match[1] as string);
      devUrl.catch(() => {});
    });

    afterAll(async () => {
      await Promise.all(services.map((service) => service.stop()));
      if (copy) rmSync(copy, { recursive: true, force: true });
      if (home) rmSync(home, { recursive: true, force: true });
    }, 30_000);

    const shell = (script: string, cwd = copy, extra: NodeJS.ProcessEnv = {}) =>
      runScript(script, { cwd, env: { ...env, ...extra }, timeoutMs: 60_000 });

    it(T.path, async () => {
      const line = shellCommand("CONTRIBUTING.md", "export PATH=$PWD/node_modules/.bin:$PATH");
      const result = await shell(`${line}\nnode --version`);
      expect(result.stdout).toMatch(/^v24\./);
    });

    it(T.helm, async () => {
      const dir = mkdtempSync(join(home, "install-"));
      const block = commandLines(shellBlockWith("docs/install.md", "cat > my-values.yaml <<EOF").text);
      const pick = (first: string) => block.find((command) => commandKey(command) === first) as string;
      const key = pick('export AGENTPLANE_API_KEY="ap_$(openssl rand -hex 24)"');
      const hash = pick('printf %s "$AGENTPLANE_API_KEY" | sha256sum');
      const values = pick("cat > my-values.yaml <<EOF");
      const install = pick(
        "helm install agentplane charts/agentplane --namespace agentplane --create-namespace -f my-values.yaml",
      );
      const made = await shell(`${key}\n${hash}\necho "key=$AGENTPLANE_API_KEY"`, dir);
      expect(made.code, made.stderr).toBe(0);
      const apiKey = /key=(ap_[0-9a-f]{48})/.exec(made.stdout)?.[1] as string;
      const printed = /^([0-9a-f]{64}) {2}-$/m.exec(made.stdout)?.[1] as string;
      expect(printed).toBe(createHash("sha256").update(apiKey).digest("hex"));
      // The reader pastes the printed hash where the values file says so.
      const written = await shell(fill(values, { "<sha256 from above>": printed }), dir);
      expect(written.code, written.stderr).toBe(0);
      expect(readFileSync(join(dir, "my-values.yaml"), "utf8")).toContain(
        createHash("sha256").update(apiKey).digest("hex"),
      );
      // No cluster here: helm's client-side dry run renders and validates the release without one.
      const dry = await shell(
        `${install.replace("charts/agentplane", `${copy}/charts/agentplane`)} --dry-run=client`,
        dir,
        {
          KUBECONFIG: join(dir, "no-cluster"),
          HELM_CONFIG_HOME: dir,
          HELM_CACHE_HOME: dir,
          HELM_DATA_HOME: dir,
        },
      );
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain("kind: Ingress");
      expect(dry.stdout).toContain("registry.example.com/agentplane/platform:0.1.0");
      // The upgrade and uninstall commands name the release, chart, namespace and values file of the install.
      const args = (command: string) => command.split(/\s+/).slice(2).join(" ").replace("--namespace", "-n");
      const upgrade = inlineCommand(
        "docs/install.md",
        "helm upgrade agentplane charts/agentplane -n agentplane -f my-values.yaml",
      );
      expect(args(upgrade)).toBe(args(install).replace(" --create-namespace", ""));
      expect(args(inlineCommand("docs/install.md", "helm uninstall agentplane -n agentplane"))).toBe(
        "agentplane -n agentplane",
      );
      // The images pushed are those `make images` builds (docker/Dockerfile targets, the chart's appVersion).
      const chart = readFileSync(join(copy, "charts/agentplane/Chart.yaml"), "utf8");
      expect(chart).toMatch(/appVersion: "?0\.1\.0"?/);
    }, 60_000);

    it(T.kube, async () => {
      const start = shellCommand(
        "docs/testing.md",
        "npx node --conditions=source testing/kube-apiserver/main.ts --port 8001",
      );
      const server = startService(fill(start, { "--port 8001": "--port 0" }), { cwd: copy, env });
      services.push(server);
      const kubeconfig = (await server.printed(/kubeconfig: (\S+)/, 60_000))[1] as string;
      const apply = shellCommand(
        "docs/testing.md",
        "kubectl --kubeconfig <path> apply --server-side -f charts/agentplane/crds/ && kubectl --kubeconfig <path> get agd",
      );
      const applied = await shell(fill(apply, { "<path>": kubeconfig }));
      expect(applied.code, applied.stderr).toBe(0);
      expect(applied.stdout).toContain("agentdeployments.agentplane.dev serverside-applied");
      // install.md's commands, in its order, on the same server (the ingress controller's namespace made first).
      const kube = { KUBECONFIG: kubeconfig };
      const commands = [
        // (`kubectl create namespace` sends protobuf, which the test server does not read.)
        "printf 'apiVersion: v1\\nkind: Namespace\\nmetadata:\\n  name: ingress-nginx\\n' | kubectl apply -f -",
        inlineCommand("docs/install.md", "kubectl label namespace ingress-nginx agentplane.dev/ingress=true"),
        fill(inlineCommand("docs/install.md", "kubectl label namespace <ns> agentplane.dev/ingress=true"), {
          "<ns>": "default",
        }),
        inlineCommand("docs/install.md", "kubectl apply --server-side -f charts/agentplane/crds/"),
        inlineCommand("docs/install.md", "kubectl delete agentdeployments --all -A"),
        inlineCommand(
          "docs/install.md",
          "kubectl delete crd agentdeployments.agentplane.dev agentrevisions.agentplane.dev",
        ),
      ];
      const ran = await shell(commands.join("\n"), copy, kube);
      expect(ran.code, ran.stderr).toBe(0);
      const labels = await shell(
        "kubectl get namespace ingress-nginx default -o jsonpath='{.items[*].metadata.labels}'",
        copy,
        kube,
      );
      expect(labels.stdout.match(/"agentplane.dev\/ingress":"true"/g)).toHaveLength(2);
      const crds = await shell("kubectl get crd -o name", copy, kube);
      expect(crds.stdout).not.toContain("agentplane.dev");
      expect((await server.stop()).left).toBe(false);
    }, 90_000);

    it(T.make, async () => {
      const targets = new Set(
        shownCommands()
          .map(({ key }) => /^make ([\w-]+)( |$)/.exec(key)?.[1])
          .filter((target): target is string => target !== undefined),
      );
      expect(targets.size).toBeGreaterThanOrEqual(15);
      for (const target of targets) {
        const plan = await shell(`make -n ${target} BASE=HEAD`);
        expect(plan.code, `make -n ${target}: ${plan.stderr}`).toBe(0);
        for (const program of recipePrograms(plan.stdout)) {
          const found = await shell(`command -v ${program} || test -x ${program}`);
          expect(found.code, `make ${target} runs ${program}, which is not installed`).toBe(0);
        }
      }
      // The areas CONTRIBUTING lists for `bench/run.ts <area>` are files in bench/.
      const areas = /`bench\/` \| `make bench` areas \(([^)]*)\)/.exec(
        readFileSync(join(REPO, "CONTRIBUTING.md"), "utf8"),
      )?.[1];
      for (const area of areas?.match(/`([\w-]+)`/g) ?? [])
        expect(readFileSync(join(copy, `bench/${area.slice(1, -1)}.ts`), "utf8")).not.toBe("");
      expect(areas).toBeDefined();
    }, 60_000);

    it(T.chart, async () => {
      const docs = readFileSync(join(copy, "docs/install.md"), "utf8");
      const crds = readFileSync(join(copy, "charts/agentplane/crds/agentdeployments.yaml"), "utf8");
      const ran = await shell("make chart-docs && make chart-crds");
      expect(ran.code, ran.stderr).toBe(0);
      expect(readFileSync(join(copy, "docs/install.md"), "utf8")).toBe(docs);
      expect(readFileSync(join(copy, "charts/agentplane/crds/agentdeployments.yaml"), "utf8")).toBe(crds);
      expect(
        inlineCommand("docs/install.md", "npx node scripts/chart-values-table.ts --write docs/install.md"),
      ).toBeDefined();
    }, 60_000);

    it(T.dev, async () => {
      const url = await devUrl;
      expect(await (await fetch(`${url}/ok`)).json()).toEqual({ ok: true });
      // The README's SDK call, at the URL this `make dev` printed.
      const snippet = docBlocks("README.md").find((block) => block.lang === "ts")?.text as string;
      const code = `${fill(snippet, { "http://127.0.0.1:8000": url })}\nconsole.log(JSON.stringify(result.messages.at(-1).content));`;
      const ran = await shell(nodeSnippet(code));
      expect(ran.code, ran.stderr).toBe(0);
      expect(ran.stdout).toContain("You said: hello");
      // `make dev` itself prints no engine warnings.
      expect(dev.output()).not.toMatch(/EBADENGINE|npm warn/i);
    }, 260_000);

    it(T.cli, async () => {
      await devUrl;
      const example = `${copy}/agent-server/example/langgraph.json`;
      const keys = join(home, "api-keys");
      const apiKey = "docs-check-key";
      writeFileSync(keys, `${createHash("sha256").update(apiKey).digest("hex")}\n`);
      const devCommand = shellCommand(
        "README.md",
        "npx node agent-server/dist/cli/main.js dev --config path/to/langgraph.json --port 8000",
      );
      const serveCommand = shellCommand(
        "README.md",
        "REDIS_URI=redis://redis:6379 AGENTPLANE_API_KEYS_FILE=/etc/agentplane/api-keys",
      );
      const direct = inlineCommand("README.md", "node_modules/.bin/node agent-server/dist/cli/main.js serve …");
      const serveEnv = { ...env, HOST: "127.0.0.1", AGENTPLANE_API_KEYS_FILE: keys };
      const started = [
        startService(fill(devCommand, { "path/to/langgraph.json": example, "--port 8000": "--port 0" }), {
          cwd: copy,
          env,
        }),
        startService(
          fill(serveCommand, {
            "redis://redis:6379": inject("redisUrl"),
            "/etc/agentplane/api-keys": keys,
            "/app/langgraph.json": example,
            "--port 8000": "--port 0",
          }),
          { cwd: copy, env: { ...serveEnv, REDIS_PREFIX: uniquePrefix("docs") } },
        ),
        // The form the docs give for process managers: the server itself, which SIGTERM stops.
        startService(`exec ${fill(direct, { "…": `--config ${example} --port 0` })}`, {
          cwd: copy,
          env: { ...serveEnv, REDIS_URI: inject("redisUrl"), REDIS_PREFIX: uniquePrefix("docs") },
        }),
      ];
      services.push(...started);
      const [devServer, serveServer, directServer] = await Promise.all(
        started.map(async (service) => (await service.printed(/Agent server: (http:\/\/\S+)/, 60_000))[1] as string),
      );
      expect((await fetch(`${devServer}/ok`)).status).toBe(200);
      expect((await fetch(`${serveServer}/ok?check_db=1`)).status).toBe(200);
      expect((await fetch(`${serveServer}/threads/search`, { method: "POST" })).status).toBe(401);
      const threads = await fetch(`${serveServer}/threads`, {
        method: "POST",
        headers: { "x-api-key": apiKey, "content-type": "application/json" },
        body: "{}",
      });
      expect(threads.status).toBe(200);
      expect((await fetch(`${directServer}/ok?check_db=1`)).status).toBe(200);
      const [, , server] = started as [Service, Service, Service];
      server.process.kill("SIGTERM");
      expect(await server.exited).toBe(0);
      // Ctrl-C stops the others, and nothing any of them started is left.
      for (const stopped of await Promise.all(started.map((service) => service.stop())))
        expect(stopped.left).toBe(false);
      // The same commands as agent-server.md writes them inline are the same program and flags.
      expect(
        inlineCommand(
          "docs/agent-server.md",
          "npx node agent-server/dist/cli/main.js dev --config /path/to/your/project/langgraph.json --port 8000",
        ),
      ).toBe(fill(devCommand, { "path/to/langgraph.json": "/path/to/your/project/langgraph.json" }));
    }, 300_000);

    it(T.images, async () => {
      await devUrl;
      // ~/my-agent: a LangGraph.js project of its own (the example graph, a package.json, a secret .env).
      const project = join(home, "my-agent");
      cpSync(join(copy, "agent-server/example/src"), join(project, "src"), { recursive: true });
      writeFileSync(
        join(project, "langgraph.json"),
        JSON.stringify({ graphs: { agent: "./src/agent.ts:graph" }, env: ".env" }),
      );
      writeFileSync(
        join(project, "package.json"),
        JSON.stringify({ name: "my-agent", type: "module", dependencies: {} }),
      );
      writeFileSync(join(project, ".env"), "OPENAI_API_KEY=sk-secret\n");
      const write = inlineCommand(
        "docs/install.md",
        "npx --no agent-server dockerfile -c ~/my-agent/langgraph.json -o ~/my-agent/Dockerfile",
      );
      const written = await shell(write);
      expect(written.code, written.stderr).toBe(0);
      expect(readFileSync(join(project, "Dockerfile"), "utf8")).toContain("FROM agentplane/agent-server:0.1.0");
      expect(readFileSync(join(project, ".dockerignore"), "utf8")).toMatch(/^\.env/m);
      const print = inlineCommand(
        "docs/agent-server.md",
        "npx --no agent-server dockerfile -c /path/to/your/project/langgraph.json",
      );
      const printed = await shell(fill(print, { "/path/to/your/project": project }));
      expect(printed.code, printed.stderr).toBe(0);
      expect(printed.stdout).toMatch(/^FROM /m);
      // Without a Docker engine `build` parses the documented flags, then stops before any work.
      const build = shellCommand(
        "docs/install.md",
        "npx --no agent-server build -t registry.example.com/me/my-agent:1 -c ~/my-agent/langgraph.json",
      );
      const built = await shell(build);
      if (!dockerEngine) {
        expect(built.code).not.toBe(0);
        expect(built.stderr).toMatch(/^agent-server build: the Docker engine is not reachable/);
      }
    }, 120_000);

    it(T.controlPlane, async () => {
      await devUrl;
      const kube = startService("npx node --conditions=source testing/kube-apiserver/main.ts --port 0", {
        cwd: copy,
        env,
      });
      services.push(kube);
      const kubeconfig = (await kube.printed(/kubeconfig: (\S+)/, 60_000))[1] as string;
      mkdirSync(join(home, ".kube"), { recursive: true });
      cpSync(kubeconfig, join(home, ".kube/config"));
      const apiKey = "ap_docs-check";
      const keys = join(home, "api-keys.jsonl");
      const grant = {
        organization_id: "6f1d3c1e-0d5e-4a5e-9a51-3c8f3f0b8a11",
        workspace_ids: ["0b7a6a3e-93b5-4a77-8b4e-2f4f2b7c9c55"],
      };
      writeFileSync(keys, `${JSON.stringify({ hash: createHash("sha256").update(apiKey).digest("hex"), ...grant })}\n`);
      const command = shellCommand("docs/control-plane.md", "KUBECONFIG=~/.kube/config");
      // The docs' port is 1985; a free one here (PORT, as the settings table says), on loopback.
      const controlPlane = startService(fill(command, { "/etc/agentplane/api-keys.jsonl": keys }), {
        cwd: copy,
        env: { ...env, PORT: "0", HOST: "127.0.0.1" },
      });
      services.push(controlPlane);
      const url = (await controlPlane.printed(/"url":"(http:[^"]+)"/, 60_000))[1] as string;
      expect((await fetch(`${url}/ok`)).status).toBe(200);
      expect((await fetch(`${url}/v2/deployments`)).status).toBe(401);
      expect((await fetch(`${url}/v2/deployments`, { headers: { "x-api-key": apiKey } })).status).toBe(200);
      expect((await controlPlane.stop()).left).toBe(false);
      await kube.stop();
    }, 180_000);
  },
);
