import { execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { CRD_MANIFEST_PATHS } from "@agentplane/crds";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { agd, agentDeployment, eventually, startWithClients } from "./clients.ts";

const KUBECTL = "/usr/bin/kubectl";
const run = promisify(execFile);
let env: Awaited<ReturnType<typeof startWithClients>>;
const ns = "kubectl";
const files = mkdtempSync(join(tmpdir(), "kubectl-test-"));

async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await run(KUBECTL, ["--kubeconfig", env.kube.kubeconfigPath, "-n", ns, ...args]);
  return stdout;
}

function manifest(name: string, object: object): string {
  const path = join(files, `${name}.yaml`);
  writeFileSync(path, stringify(object));
  return path;
}

beforeAll(async () => {
  env = await startWithClients();
  await env.core.createNamespace({ body: { metadata: { name: ns } } });
});
afterAll(async () => {
  await env.kube.close();
  rmSync(files, { recursive: true, force: true });
});

describe.skipIf(!existsSync(KUBECTL))("kubectl against the test server", () => {
  it("applies, re-applies and server-side applies a custom resource", async () => {
    const path = manifest("a", agentDeployment("agent-a"));
    expect(await kubectl("apply", "-f", path)).toContain("agentdeployment.agentplane.dev/agent-a created");
    expect(await kubectl("apply", "-f", path)).toContain("unchanged");
    const changed = manifest("a2", agentDeployment("agent-a", "registry.example/agent:2"));
    expect(await kubectl("apply", "-f", changed)).toContain("configured");
    expect(await kubectl("apply", "--server-side", "--force-conflicts", "-f", changed)).toContain("serverside-applied");
    expect(await kubectl("get", "agd", "agent-a", "-o", "jsonpath={.spec.template.image} {.metadata.generation}")).toBe(
      "registry.example/agent:2 2",
    );
  });

  it("shows the printer columns of `kubectl get agentdeployments`", async () => {
    await kubectl(
      "patch",
      "agd",
      "agent-a",
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify({
        status: { latestReadyRevision: "r1", deploymentStatus: "READY", url: "http://agent-a:8000", readyReplicas: 2 },
      }),
    );
    const [header, row] = (await kubectl("get", "agentdeployments")).trim().split("\n");
    expect(header?.split(/\s+/)).toEqual(["NAME", "REVISION", "STATUS", "URL", "READY", "AGE"]);
    expect(row?.split(/\s+/).slice(0, 5)).toEqual(["agent-a", "r1", "READY", "http://agent-a:8000", "2"]);
    expect(row?.split(/\s+/)[5]).toMatch(/^\d+s$/);
  });

  it("follows changes with `kubectl get -w`, keeping the columns", async () => {
    const watcher = spawn(KUBECTL, ["--kubeconfig", env.kube.kubeconfigPath, "-n", ns, "get", "agd", "-w"]);
    let output = "";
    watcher.stdout.on("data", (chunk) => {
      output += chunk;
    });
    await eventually(
      () => output,
      (text) => text.includes("agent-a"),
    );
    await env.custom.patchNamespacedCustomObjectStatus({
      ...agd,
      namespace: ns,
      name: "agent-a",
      body: [{ op: "replace", path: "/status/deploymentStatus", value: "AWAITING_DELETE" }],
    });
    await eventually(
      () => output,
      (text) => text.includes("AWAITING_DELETE"),
    );
    watcher.kill();
    expect(output.split("\n")[0]?.split(/\s+/)).toEqual(["NAME", "REVISION", "STATUS", "URL", "READY", "AGE"]);
  });

  it("describes an object with its events", async () => {
    const owner = env.kube.get("agentplane.dev/v1alpha1", "agentdeployments", ns, "agent-a")!;
    await env.core.createNamespacedEvent({
      namespace: ns,
      body: {
        metadata: { name: "agent-a.1" },
        involvedObject: {
          apiVersion: owner.apiVersion,
          kind: owner.kind,
          name: "agent-a",
          namespace: ns,
          uid: owner.metadata.uid,
        },
        reason: "RolloutStarted",
        message: "rolling out revision r1",
        type: "Normal",
        source: { component: "agentplane-operator" },
      },
    });
    const described = await kubectl("describe", "agd", "agent-a");
    expect(described).toMatch(/Normal\s+RolloutStarted\s+.*rolling out revision r1/);
  });

  it("reports schema violations as the real apiserver does", async () => {
    const bad = agentDeployment("agent-bad");
    (bad.spec as any).source = "github";
    const error = await kubectl("apply", "-f", manifest("bad", bad)).catch((e) => e.stderr as string);
    expect(error).toContain('The AgentDeployment "agent-bad" is invalid: spec.source: Unsupported value: "github"');
  });

  it("lists by category and short name and applies built-ins with strategic merge", async () => {
    const web = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web" },
      spec: {
        selector: { matchLabels: { app: "web" } },
        template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "web", image: "nginx:1" }] } },
      },
    };
    await kubectl("apply", "-f", manifest("web", web));
    const all = await kubectl("get", "all");
    expect(all).toContain("deployment.apps/web");
    expect(all).toContain("agentdeployment.agentplane.dev/agent-a");
    expect(await kubectl("get", "agentplane", "-o", "name")).toContain("agentdeployment.agentplane.dev/agent-a");
    const resources = await kubectl("api-resources", "--api-group=agentplane.dev");
    expect(resources).toMatch(/agentdeployments\s+agd\s+agentplane.dev\/v1alpha1\s+true\s+AgentDeployment/);
  });

  it("creates namespaces, secrets, config maps and service accounts (protobuf bodies)", async () => {
    const created = async (...args: string[]) =>
      (await run(KUBECTL, ["--kubeconfig", env.kube.kubeconfigPath, "create", ...args])).stdout;
    expect(await created("namespace", "team-a")).toBe("namespace/team-a created\n");
    expect(
      await created("secret", "generic", "api-keys", "-n", "team-a", "--from-literal=OPENAI_API_KEY=sk-test"),
    ).toBe("secret/api-keys created\n");
    expect(await created("configmap", "settings", "-n", "team-a", "--from-literal=mode=fast")).toBe(
      "configmap/settings created\n",
    );
    expect(await created("serviceaccount", "runner", "-n", "team-a")).toBe("serviceaccount/runner created\n");
    const secret = await env.core.readNamespacedSecret({ name: "api-keys", namespace: "team-a" });
    expect(secret.data).toEqual({ OPENAI_API_KEY: Buffer.from("sk-test").toString("base64") });
    expect(secret.type).toBe("Opaque");
    const settings = await env.core.readNamespacedConfigMap({ name: "settings", namespace: "team-a" });
    expect(settings.data).toEqual({ mode: "fast" });
    const refused = await created("quota", "q", "-n", "team-a", "--hard=pods=1").catch((e) => e.stderr as string);
    expect(refused).toContain("not v1/ResourceQuota");
  });

  it("applies the CRD manifests themselves and deletes objects", async () => {
    const applied = await kubectl("apply", ...CRD_MANIFEST_PATHS.flatMap((p) => ["-f", p]));
    expect(applied).toContain("customresourcedefinition.apiextensions.k8s.io/agentdeployments.agentplane.dev");
    expect(await kubectl("delete", "agd", "agent-a")).toContain('"agent-a" deleted');
    expect(await kubectl("get", "agd", "-o", "name")).toBe("");
  });
});
