import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { AGENT_DEPLOYMENT_PLURAL, AGENT_REVISION_PLURAL, GROUP, VERSION } from "@agentplane/crds";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type RunningControlPlane, startControlPlane } from "../app.ts";
import {
  type Cluster,
  call,
  controlPlaneConfig,
  deploymentBody,
  identities,
  kubeconfigVia,
  startTestCluster,
} from "../testing/harness.ts";
import { OperatorStandIn } from "../testing/operator-stand-in.ts";

/**
 * A proxy between the control plane and the Kubernetes API that, just before forwarding a PUT the
 * control plane sends, lets `interfere` change the same object directly, so that PUT carries a stale
 * resourceVersion: a deterministic concurrent update.
 */
class InterferingProxy {
  interfere: ((path: string) => Promise<void>) | undefined;
  puts: string[] = [];
  private server: Server | undefined;
  private readonly upstream: URL;

  constructor(upstream: string) {
    this.upstream = new URL(upstream);
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      void this.forward(req, res).catch((error: Error) => {
        if (!res.headersSent) res.writeHead(502);
        res.end(error.message);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}`;
  }

  /** Streams responses through (watches stay open); buffers request bodies, which are small. */
  private async forward(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = req.url ?? "/";
    if (req.method === "PUT") {
      this.puts.push(path);
      await this.interfere?.(path);
    }
    const upstream = request(
      {
        host: this.upstream.hostname,
        port: this.upstream.port,
        method: req.method,
        path,
        headers: { ...req.headers, host: this.upstream.host },
      },
      (response) => {
        res.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(res);
      },
    );
    upstream.on("error", (error) => res.destroy(error));
    res.on("close", () => upstream.destroy());
    upstream.end(Buffer.concat(chunks));
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server?.closeAllConnections();
      this.server?.close(() => resolve());
    });
  }
}

let cluster: Cluster;
let proxy: InterferingProxy;
let controlPlane: RunningControlPlane;
let operator: OperatorStandIn;
const ids = identities();
const api = (method: string, path: string, body?: unknown) =>
  call(controlPlane.url, method, path, { body, headers: { "x-api-key": ids.keys.a1 } });

beforeAll(async () => {
  cluster = await startTestCluster();
  const upstream = new KubeConfig();
  upstream.loadFromFile(cluster.kubeconfigPath);
  proxy = new InterferingProxy(upstream.getCurrentCluster()?.server ?? "");
  const proxyUrl = await proxy.start();
  controlPlane = await startControlPlane(controlPlaneConfig(kubeconfigVia(cluster.kubeconfigPath, proxyUrl), ids));
  operator = new OperatorStandIn(cluster.custom);
});
afterAll(async () => {
  await controlPlane?.close();
  await proxy?.close();
  await cluster?.close();
});
beforeEach(() => {
  proxy.interfere = undefined;
  proxy.puts = [];
});

const deploymentPath = (id: string) => `/apis/${GROUP}/${VERSION}/namespaces/agents/${AGENT_DEPLOYMENT_PLURAL}/${id}`;

/** What a concurrent writer (another replica, kubectl) does: a change that bumps resourceVersion. */
async function touchDeployment(id: string, mark: string) {
  const current = await operator.deployment("agents", id);
  await cluster.custom.replaceNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: AGENT_DEPLOYMENT_PLURAL,
    namespace: "agents",
    name: id,
    body: {
      ...current,
      metadata: { ...current.metadata, annotations: { ...current.metadata.annotations, touched: mark } },
    },
  });
}

describe("resourceVersion conflicts", () => {
  it("retries a PATCH whose deployment was changed concurrently and keeps both changes", async () => {
    const d = (await api("POST", "/v2/deployments", deploymentBody("conflicted"))).body;
    let injected = 0;
    proxy.interfere = async (path) => {
      if (path === deploymentPath(d.id) && injected < 2) await touchDeployment(d.id, `n${++injected}`);
    };
    const patched = await api("PATCH", `/v2/deployments/${d.id}`, { source_revision_config: { image_uri: "img:2" } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(injected).toBe(2);
    expect(proxy.puts.filter((p) => p === deploymentPath(d.id))).toHaveLength(3);
    const cr = await operator.deployment("agents", d.id);
    expect(cr.metadata.annotations?.touched).toBe("n2");
    expect(cr.spec.revisionName).toBe(patched.body.latest_revision_id);
    expect(cr.spec.template.image).toBe("img:2");
    const revisions = (await api("GET", `/v2/deployments/${d.id}/revisions`)).body.resources;
    expect(revisions).toHaveLength(2);
  });

  it("answers 409 (never 500) when the object keeps changing, and creates no revision", async () => {
    const d = (await api("POST", "/v2/deployments", deploymentBody("hot"))).body;
    let n = 0;
    proxy.interfere = async (path) => {
      if (path === deploymentPath(d.id)) await touchDeployment(d.id, `m${++n}`);
    };
    const patched = await api("PATCH", `/v2/deployments/${d.id}`, { source_revision_config: { image_uri: "img:2" } });
    expect(patched).toEqual({ status: 409, body: { detail: expect.stringMatching(/modified concurrently/) } });
    proxy.interfere = undefined;
    expect((await api("GET", `/v2/deployments/${d.id}/revisions`)).body.resources).toHaveLength(1);
    expect((await api("GET", `/v2/deployments/${d.id}`)).body.source_revision_config.image_uri).toBe(
      "registry.example/agent:1",
    );

    proxy.interfere = async (path) => {
      if (path === deploymentPath(d.id)) await touchDeployment(d.id, `m${++n}`);
    };
    const withSecrets = await api("PATCH", `/v2/deployments/${d.id}`, { secrets: [{ name: "ROTATED", value: "new" }] });
    expect(withSecrets.status).toBe(409);
    proxy.interfere = undefined;
    // the failed PATCH put the previous secrets back
    expect((await api("GET", `/v2/deployments/${d.id}`)).body.secrets).toEqual([
      { name: "OPENAI_API_KEY", value: "sk-test" },
    ]);
  });

  it("keeps a status the operator wrote first instead of overwriting it with AWAITING_DEPLOY", async () => {
    proxy.interfere = async (path) => {
      const match = new RegExp(`/${AGENT_REVISION_PLURAL}/([^/]+)/status$`).exec(path);
      if (match?.[1]) await operator.setRevisionStatus("agents", match[1], { revisionStatus: "DEPLOYING" });
    };
    const d = (await api("POST", "/v2/deployments", deploymentBody("operator-first"))).body;
    const revision = (await api("GET", `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}`)).body;
    expect(revision.status).toBe("DEPLOYING");
  });

  it("serializes concurrent PATCHes of one deployment without losing any", async () => {
    const d = (await api("POST", "/v2/deployments", deploymentBody("parallel"))).body;
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        api("PATCH", `/v2/deployments/${d.id}`, { source_revision_config: { image_uri: `img:${i}` } }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
    const revisions = (await api("GET", `/v2/deployments/${d.id}/revisions`)).body.resources;
    expect(revisions).toHaveLength(9);
    const final = (await api("GET", `/v2/deployments/${d.id}`)).body;
    const latest = revisions.find((r: { id: string }) => r.id === final.latest_revision_id);
    expect(latest.source_revision_config.image_uri).toBe(final.source_revision_config.image_uri);
  });
});
