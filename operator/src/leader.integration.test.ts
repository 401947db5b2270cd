import { readFileSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type AgentDeployment, API_VERSION, loadCrdManifests } from "@agentplane/crds";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KubeApiServer, startKubeApiServer } from "../../testing/kube-apiserver/server.ts";
import { eventually } from "../../testing/kubelet/cluster.ts";
import { settingsFromEnv } from "./config.ts";
import { microTime } from "./controller-runtime/leader.ts";
import { KubeClient } from "./kube/client.ts";
import { connectionFromKubeconfig } from "./kube/config.ts";
import { resourcePath, resources } from "./kube/resources.ts";
import { type RunningOperator, startOperator } from "./operator.ts";

/**
 * Leader election as controller-runtime does it: a replica reconciles only while it holds the lease.
 * Here the first list of AgentDeployments is held back by a proxy until the lease has been taken
 * over by another replica; once the caches do fill, nothing may be reconciled.
 */

const NS = "agents";
const ID = "0d5c4b3a-2e1f-4a0b-9c8d-7e6f5a4b3c2d";

let api: KubeApiServer;
let proxy: Server;
let operator: RunningOperator | undefined;
let releaseList: () => void = () => {};
const listHeld = new Promise<void>((resolve) => {
  releaseList = resolve;
});

/** Forwards to the API server, holding the initial (non-watch) list of AgentDeployments until released. */
async function startGatingProxy(target: string): Promise<string> {
  const upstream = new URL(target);
  proxy = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const held =
      req.method === "GET" && url.pathname.endsWith("/agentdeployments") && url.searchParams.get("watch") !== "true";
    void (held ? listHeld : Promise.resolve()).then(() => {
      const forward = httpRequest(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
        (response) => {
          res.writeHead(response.statusCode ?? 502, response.headers);
          res.flushHeaders();
          response.pipe(res);
        },
      );
      forward.on("error", () => res.destroy());
      res.on("close", () => forward.destroy());
      req.pipe(forward);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  api = await startKubeApiServer({ crds: loadCrdManifests(), namespaces: ["default", NS] });
  const kube = new KubeClient(connectionFromKubeconfig(api.kubeconfigPath));
  await kube.create(resourcePath(resources.agentDeployment, NS), {
    apiVersion: API_VERSION,
    kind: "AgentDeployment",
    metadata: { name: ID, namespace: NS },
    spec: {
      displayName: "waiting",
      tenantId: "tenant-1",
      source: "external_docker",
      revisionName: "rev-1",
      template: { image: "example/agent:1" },
    },
  });
  const proxied = `${api.kubeconfigPath}.proxied`;
  writeFileSync(proxied, readFileSync(api.kubeconfigPath, "utf8").replace(api.url, await startGatingProxy(api.url)));
  const settings = settingsFromEnv({
    HEALTH_PORT: "0",
    HEALTH_HOST: "127.0.0.1",
    OPERATOR_NAMESPACE: NS,
    POD_NAME: "operator-a",
    POLL_SECONDS: "1",
    LEASE_DURATION_SECONDS: "1",
    LEASE_RENEW_DEADLINE_SECONDS: "0.6",
    LEASE_RETRY_PERIOD_SECONDS: "0.1",
  });
  operator = await startOperator(connectionFromKubeconfig(proxied), settings, pino({ level: "silent" }));
});

afterAll(async () => {
  releaseList();
  await operator?.close();
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
  await api?.close();
});

describe("leader election", () => {
  it("leadership lost during the first informer sync: no reconcile happens, and the replica stops campaigning", async () => {
    const running = operator as RunningOperator;
    await eventually(() => running.isLeader(), 5_000, "the lease to be acquired");
    // Another replica takes the lease over (as after a network partition).
    const leasePath = resourcePath(resources.lease, NS, "agentplane-operator");
    const direct = new KubeClient(connectionFromKubeconfig(api.kubeconfigPath));
    const lease = (await direct.get<{ spec: Record<string, unknown> }>(leasePath)) as { spec: Record<string, unknown> };
    const now = microTime(new Date());
    await direct.request("PUT", leasePath, {
      body: { ...lease, spec: { ...lease.spec, holderIdentity: "operator-b", acquireTime: now, renewTime: now } },
    });
    await running.lostLeadership;
    expect(running.isLeader()).toBe(false);

    releaseList();
    await running.synced;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const agd = (await direct.get<AgentDeployment>(resourcePath(resources.agentDeployment, NS, ID))) as AgentDeployment;
    expect(agd.metadata.finalizers).toBeUndefined();
    expect(agd.status).toBeUndefined();
    const metrics = await (await fetch(`http://127.0.0.1:${running.healthPort}/metrics`)).text();
    expect(metrics).not.toMatch(/^agentplane_operator_reconciles_total\{[^}]*\} [1-9]/m);
    // It does not take the lease back once it has expired: a replica that lost it must restart.
    const held = (await direct.get<{ spec: { holderIdentity: string } }>(leasePath)) as {
      spec: { holderIdentity: string };
    };
    expect(held.spec.holderIdentity).toBe("operator-b");
    expect(running.isLeader()).toBe(false);
  }, 30_000);
});
