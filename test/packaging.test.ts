import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { parseDockerfile } from "../agent-server/src/image/testing/dockerfile.ts";
import { currentTable, replaceTable, START_MARKER } from "../scripts/chart-values-table.ts";
import { CHART, REPO } from "../testing/helm.ts";

/**
 * The cluster scripts need Docker and k3d, which these machines lack. Each runs here with DRY_RUN=1:
 * commands needing Docker or a cluster are printed, everything else (API key, values, `helm template`
 * of the chart) really runs, and the printed steps are checked against what the other tests verify
 * (Dockerfile targets: images.test.ts; chart: helm.test.ts; e2e suite: e2e.test.ts).
 */

const VERSION = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")).version as string;
const stateDir = mkdtempSync(join(tmpdir(), "cluster-state-"));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

function dryRun(script: string): { status: number | null; stdout: string; stderr: string; commands: string[] } {
  const result = spawnSync(join(REPO, "scripts", script), {
    encoding: "utf8",
    env: {
      ...process.env,
      PATH: `${join(REPO, "node_modules/.bin")}:${process.env.PATH}`,
      DRY_RUN: "1",
      STATE_DIR: stateDir,
      AGENTPLANE_BUNDLED_HELM: "1",
    },
  });
  const commands = result.stdout
    .split("\n")
    .filter((line) => line.startsWith("+ "))
    .map((line) => line.slice(2));
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, commands };
}

const scripts = readdirSync(join(REPO, "scripts")).filter(
  (file) => file.startsWith("cluster-") && file.endsWith(".sh"),
);

describe("cluster scripts", () => {
  it.each(scripts)("%s parses (bash -n)", (script) => {
    const check = spawnSync("bash", ["-n", join(REPO, "scripts", script)], { encoding: "utf8" });
    expect(check.stderr).toBe("");
    expect(check.status).toBe(0);
  });

  const up = dryRun("cluster-up.sh");

  it("cluster-up: builds the Dockerfile's image targets and imports exactly what it built", () => {
    expect(up.stderr).toBe("");
    expect(up.status).toBe(0);
    expect(up.commands[0]).toBe("k3d cluster create agentplane --wait --port 8080:80@loadbalancer");
    const stages = parseDockerfile(readFileSync(join(REPO, "docker/Dockerfile"), "utf8")).map((stage) => stage.name);
    const builds = up.commands.filter((c) => c.startsWith("docker build "));
    const built = builds.map((command) => {
      const [, target, tag] = /--target (\S+) -t (\S+) \.$/.exec(command) ?? [];
      expect(stages).toContain(target);
      return tag;
    });
    const tagged = up.commands.filter((c) => c.startsWith("docker tag ")).map((c) => c.split(" ")[3]);
    const imported = up.commands
      .find((c) => c.startsWith("k3d image import"))
      ?.split(" ")
      .slice(5);
    expect(imported?.sort()).toEqual([...built, ...tagged].sort());
    expect(built).toEqual([`agentplane/agent-server:${VERSION}`, `agentplane/platform:${VERSION}`]);
  });

  it("cluster-up: the chart it installs renders, uses the imported platform image and the namespaces it creates", () => {
    const rendered = parseAllDocuments(readFileSync(join(stateDir, "rendered.yaml"), "utf8"))
      .map((d) => d.toJS())
      .filter(Boolean);
    const images = rendered
      .filter((m) => m.kind === "Deployment")
      .flatMap((m) => m.spec.template.spec.containers.map((c: { image: string }) => c.image));
    expect(new Set(images)).toEqual(new Set([`agentplane/platform:${VERSION}`]));
    expect(rendered.filter((m) => m.kind === "CustomResourceDefinition")).toHaveLength(2);
    const created = up.commands.filter((c) => c.startsWith("kubectl create namespace ")).map((c) => c.split(" ")[3]);
    const roleNamespaces = rendered.filter((m) => m.kind === "Role").map((m) => m.metadata.namespace);
    for (const namespace of roleNamespaces) expect(created).toContain(namespace);
  });

  it("cluster-up: prints the URL and an API key whose SHA-256 is the only thing the chart receives", () => {
    const key = /API key: +(\S+)/.exec(up.stdout)?.[1] ?? "";
    expect(key).toMatch(/^ap_[\w-]{32}$/);
    expect(up.stdout).toContain("Control plane: http://agentplane.localhost:8080");
    const values = parse(readFileSync(join(stateDir, "values.yaml"), "utf8"));
    expect(values.controlPlane.apiKeys.grants[0].hash).toBe(createHash("sha256").update(key).digest("hex"));
    expect(readFileSync(join(stateDir, "values.yaml"), "utf8")).not.toContain(key);
    expect(readFileSync(join(stateDir, "rendered.yaml"), "utf8")).not.toContain(key);
    const credentials = join(stateDir, "credentials.env");
    expect(readFileSync(credentials, "utf8")).toContain(`AGENTPLANE_API_KEY=${key}\n`);
    expect(statSync(credentials).mode & 0o077).toBe(0);
  });

  it("cluster-e2e: runs test/e2e.test.ts against the cluster with the two imported agent images", () => {
    const e2e = dryRun("cluster-e2e.sh");
    expect(e2e.status).toBe(0);
    const vitest = e2e.commands.find((c) => c.includes("vitest run"));
    expect(vitest).toBe(
      `env E2E_KUBECONFIG=${stateDir}/kubeconfig E2E_AGENT_IMAGES=agentplane/agent-server:${VERSION},agentplane/agent-server:${VERSION}-next npx vitest run test/e2e.test.ts`,
    );
    const suite = readFileSync(join(REPO, "test/e2e.test.ts"), "utf8");
    expect(suite).toContain("process.env.E2E_KUBECONFIG");
    expect(suite).toContain("process.env.E2E_AGENT_IMAGES");
    const imported = up.commands.find((c) => c.startsWith("k3d image import")) ?? "";
    for (const image of /E2E_AGENT_IMAGES=(\S+)/.exec(vitest ?? "")?.[1]?.split(",") ?? [])
      expect(imported).toContain(image);
    // The installed operator is paused during the suite and restored afterwards.
    expect(e2e.commands.filter((c) => c.includes("scale deploy/agentplane-operator"))).toEqual([
      "kubectl -n agentplane scale deploy/agentplane-operator --replicas=0",
      "kubectl -n agentplane scale deploy/agentplane-operator --replicas=1",
    ]);
  });

  it("cluster-down: deletes the cluster and the saved credentials", () => {
    const down = dryRun("cluster-down.sh");
    expect(down.status).toBe(0);
    expect(down.commands).toEqual(["k3d cluster delete agentplane", `rm -rf ${stateDir}`]);
  });

  it("the Makefile runs each script", () => {
    const makefile = readFileSync(join(REPO, "Makefile"), "utf8");
    const targets: [string, string][] = [
      ["images", "cluster-images.sh"],
      ["cluster-up", "cluster-up.sh"],
      ["cluster-e2e", "cluster-e2e.sh"],
      ["cluster-down", "cluster-down.sh"],
    ];
    for (const [target, script] of targets) {
      expect(makefile).toMatch(new RegExp(`\\n${target}:.*\\n\\tscripts/${script.replace(".", "\\.")}\\n`));
    }
  });
});

describe("chart values table in docs/install.md", () => {
  const page = join(REPO, "docs/install.md");

  it("is current in docs/install.md (fix: make chart-docs)", () => {
    const document = readFileSync(page, "utf8");
    expect(document).toContain(START_MARKER);
    expect(replaceTable(document, currentTable(CHART))).toBe(document);
  });

  it("lists every value of values.yaml with a description", () => {
    const table = currentTable(CHART);
    const rows = table.split("\n").slice(2);
    expect(rows.length).toBeGreaterThan(40);
    for (const key of ["operator.replicas", "controlPlane.apiKeys.existingSecret", "controlPlane.ingress.host"]) {
      expect(rows.some((row) => row.startsWith(`| \`${key}\` `))).toBe(true);
    }
    for (const row of rows) expect(row.split(" | ")[3]?.trim(), row).not.toBe("");
  });
});
