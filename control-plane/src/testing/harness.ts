import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashApiKey } from "@agentplane/common";
import {
  AGENT_DEPLOYMENT_PLURAL,
  AGENT_REVISION_PLURAL,
  API_KEY_HASHES_KEY,
  deploymentApiKeysSecretName,
  GROUP,
  loadCrdManifests,
  VERSION,
} from "@agentplane/crds";
import { CoreV1Api, CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { SignJWT } from "jose";
import { expect } from "vitest";
import { startKubeApiServer } from "../../../testing/kube-apiserver/server.ts";
import { type RunningControlPlane, startControlPlane } from "../app.ts";
import type { ControlPlaneConfig, NamespaceLayout } from "../config.ts";

export const JWT_SECRET = "control-plane-tests-shared-secret-0123456789";
export const NAMESPACES = ["agents", "team-b"];
export const PROVIDERS_NAMESPACE = "agentplane";

/** Two organizations: A with two workspaces, B with one; keys scoped to one or both of A's workspaces. */
export function identities() {
  const orgA = randomUUID();
  const orgB = randomUUID();
  const wsA1 = randomUUID();
  const wsA2 = randomUUID();
  const wsB = randomUUID();
  const keys = { a1: `key-a1-${randomUUID()}`, multi: `key-multi-${randomUUID()}`, b: `key-b-${randomUUID()}` };
  const grants = [
    { hash: hashApiKey(keys.a1), organization_id: orgA, workspace_ids: [wsA1] },
    { hash: hashApiKey(keys.multi), organization_id: orgA, workspace_ids: [wsA1, wsA2] },
    { hash: hashApiKey(keys.b), organization_id: orgB, workspace_ids: [wsB] },
  ];
  return { orgA, orgB, wsA1, wsA2, wsB, keys, grants };
}
export type Identities = ReturnType<typeof identities>;

export function bearer(claims: Record<string, unknown>, secret = JWT_SECRET, expires = "5m"): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256" })
    .setIssuedAt()
    .setExpirationTime(expires)
    .sign(new TextEncoder().encode(secret));
}

export interface CallOptions {
  body?: unknown;
  /** Sent verbatim instead of JSON-encoding `body`. */
  raw?: string;
  headers?: Record<string, string>;
}

export interface ApiResponse {
  status: number;
  /** Parsed JSON (asserted field by field in tests), or the raw text. */
  body: any;
}

/**
 * A refusal as every control-plane 4xx answers: `status`, and for 422 validation issues
 * `{loc, msg, type}` (the first at `loc` when given), else `{detail: "..."}`.
 */
export function expectRefusal(res: ApiResponse, status: number, loc?: readonly unknown[]): void {
  expect(res.status, JSON.stringify(res.body).slice(0, 2000)).toBe(status);
  if (status !== 422) {
    expect(res.body).toEqual({ detail: expect.any(String) });
    return;
  }
  expect(res.body.detail.length).toBeGreaterThan(0);
  for (const issue of res.body.detail) {
    expect(issue).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
  }
  if (loc) expect(res.body.detail[0].loc).toEqual(loc);
}

export async function call(
  baseUrl: string,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers["content-type"] ??= "application/json";
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // non-JSON (the /docs page)
  }
  return { status: response.status, body: parsed };
}

export interface Cluster {
  kubeconfigPath: string;
  custom: CustomObjectsApi;
  core: CoreV1Api;
  close(): Promise<void>;
}

export function kubeClientsFor(kubeconfigPath: string) {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfigPath);
  return { custom: config.makeApiClient(CustomObjectsApi), core: config.makeApiClient(CoreV1Api), config };
}

/** The in-repo Kubernetes API test server with the agentplane CRDs installed. */
export async function startTestCluster(): Promise<Cluster> {
  const server = await startKubeApiServer({ crds: loadCrdManifests() });
  const clients = kubeClientsFor(server.kubeconfigPath);
  await ensureNamespaces(clients.core);
  return { kubeconfigPath: server.kubeconfigPath, ...clients, close: () => server.close() };
}

export async function ensureNamespaces(core: CoreV1Api): Promise<void> {
  for (const name of [...NAMESPACES, PROVIDERS_NAMESPACE]) {
    await core.createNamespace({ body: { metadata: { name } } }).catch((error: { code?: number }) => {
      if (error.code !== 409) throw error;
    });
  }
}

/** A copy of `kubeconfigPath` whose current cluster is reached at `server` (e.g. a fault-injecting proxy). */
export function kubeconfigVia(kubeconfigPath: string, server: string): string {
  const source = new KubeConfig();
  source.loadFromFile(kubeconfigPath);
  const current = source.getCurrentCluster();
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: source.clusters.map((cluster) => (cluster.name === current?.name ? { ...cluster, server } : cluster)),
    users: source.users,
    contexts: source.contexts,
    currentContext: source.currentContext,
  });
  const path = join(mkdtempSync(join(tmpdir(), "cp-kubeconfig-")), "config");
  writeFileSync(path, config.exportConfig());
  return path;
}

/** The tenant-namespace prefix of harnesses started with the `workspace` layout. */
export const TENANT_PREFIX = "tenant-";

export function controlPlaneConfig(
  kubeconfigPath: string,
  ids: Identities,
  layout: NamespaceLayout = { kind: "shared", namespaces: NAMESPACES },
): ControlPlaneConfig {
  return {
    port: 0,
    host: "127.0.0.1",
    kubeconfigPath,
    layout,
    providersNamespace: PROVIDERS_NAMESPACE,
    apiKeys: ids.grants,
    jwt: { secret: JWT_SECRET, organizationClaim: "organization_id", workspacesClaim: "workspace_ids" },
    logLevel: "silent",
  };
}

/** Everything the control plane may write, counted: a rejected request must leave these unchanged. */
export async function countObjects(cluster: Pick<Cluster, "custom" | "core">): Promise<number> {
  return (await clusterSnapshot(cluster)).length;
}

/**
 * Every object of the kinds the control plane writes, in every namespace, as `kind namespace/name
 * resourceVersion` (sorted): equal snapshots mean nothing was created, changed or deleted.
 */
export async function clusterSnapshot(cluster: Pick<Cluster, "custom" | "core">): Promise<string[]> {
  const entries: string[] = [];
  const add = (
    kind: string,
    items: { metadata?: { namespace?: string; name?: string; resourceVersion?: string } }[],
  ) => {
    for (const { metadata } of items) {
      entries.push(`${kind} ${metadata?.namespace ?? ""}/${metadata?.name} ${metadata?.resourceVersion}`);
    }
  };
  const namespaces = (await cluster.core.listNamespace()).items;
  add("Namespace", namespaces);
  for (const namespace of namespaces.map((ns) => ns.metadata?.name ?? "")) {
    for (const plural of [AGENT_DEPLOYMENT_PLURAL, AGENT_REVISION_PLURAL]) {
      const list = (await cluster.custom.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural,
        namespace,
      })) as {
        items: { metadata?: { namespace?: string; name?: string; resourceVersion?: string } }[];
      };
      add(plural, list.items);
    }
    add("Secret", (await cluster.core.listNamespacedSecret({ namespace })).items);
    add("ConfigMap", (await cluster.core.listNamespacedConfigMap({ namespace })).items);
  }
  return entries.sort();
}

export interface Harness {
  cluster: Cluster;
  controlPlane: RunningControlPlane;
  ids: Identities;
  /** Calls the API as workspace A1 (key bound to that one workspace) unless headers say otherwise. */
  api(method: string, path: string, options?: CallOptions): Promise<ApiResponse>;
  /** Creates a deployment as workspace A1 (`deploymentBody` with `overrides`); throws unless it is created. */
  createDeployment(name: string, overrides?: Record<string, unknown>): Promise<ApiResponse["body"]>;
  close(): Promise<void>;
}

/** A harness over the shared namespaces `NAMESPACES`, or over tenant namespaces (`layout` workspace). */
export async function startHarness(layout?: NamespaceLayout): Promise<Harness> {
  const cluster = await startTestCluster();
  const ids = identities();
  const controlPlane = await startControlPlane(controlPlaneConfig(cluster.kubeconfigPath, ids, layout));
  const api: Harness["api"] = (method, path, options = {}) =>
    call(controlPlane.url, method, path, { ...options, headers: { "x-api-key": ids.keys.a1, ...options.headers } });
  return {
    cluster,
    controlPlane,
    ids,
    api,
    createDeployment: async (name, overrides = {}) => {
      const res = await api("POST", "/v2/deployments", { body: deploymentBody(name, overrides) });
      if (res.status !== 201) throw new Error(`creating ${name}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    },
    close: async () => {
      await controlPlane.close();
      await cluster.close();
    },
  };
}

/** A `POST /v2/listeners` body: a Kubernetes listener `computeId` for `namespaces` (null: any). */
export const listenerBody = (computeId: string, namespaces: string[] | null = ["apps"]) => ({
  compute_type: "k8s",
  compute_id: computeId,
  compute_config: { k8s_namespaces: namespaces },
});

export function deploymentBody(name: string, overrides: Record<string, unknown> = {}) {
  return {
    name,
    source: "external_docker",
    source_config: {
      listener_config: { k8s_namespace: "agents" },
      resource_spec: { min_scale: 1, max_scale: 2, cpu: 0.5, memory_mb: 256 },
    },
    source_revision_config: { image_uri: "registry.example/agent:1" },
    secrets: [{ name: "OPENAI_API_KEY", value: "sk-test" }],
    ...overrides,
  };
}

/** The SHA-256 digests in a deployment's `<id>-api-keys` Secret (undefined when there is no such Secret). */
export async function apiKeyHashesOf(cluster: Pick<Cluster, "core">, id: string): Promise<string[] | undefined> {
  const secret = await cluster.core
    .readNamespacedSecret({ namespace: "agents", name: deploymentApiKeysSecretName(id) })
    .catch(() => undefined);
  if (!secret) return undefined;
  const text = Buffer.from(secret.data?.[API_KEY_HASHES_KEY] ?? "", "base64").toString("utf8");
  return text.split("\n").filter(Boolean).sort();
}
