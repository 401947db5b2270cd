import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ContainerLogServer, podLogPath, serveContainerLogs } from "../kubelet/container-logs.ts";
import { startWithClients } from "./clients.ts";

/** pods/log: looked up on the pod's Node and forwarded to that node's kubelet (here its log endpoint alone). */
let env: Awaited<ReturnType<typeof startWithClients>>;
let kubelet: ContainerLogServer;
const ns = "logs";
const dir = mkdtempSync(join(tmpdir(), "pod-log-"));
const restricted = { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } };
const pod = (name: string, containers: string[], nodeName?: string) => ({
  metadata: { name },
  spec: {
    ...(nodeName ? { nodeName } : {}),
    containers: containers.map((c) => ({ name: c, image: "agent:1", securityContext: restricted })),
  },
});

beforeAll(async () => {
  env = await startWithClients();
  kubelet = await serveContainerLogs(dir, (_ns, name) => (name === "on-node" ? "agent-server" : undefined));
  writeFileSync(podLogPath(dir, "on-node"), `${new Date().toISOString()} hello\n`);
  await env.core.createNamespace({ body: { metadata: { name: ns } } });
  await env.core.createNode({ body: { metadata: { name: "node-1" } } });
  const node = await env.core.readNode({ name: "node-1" });
  await env.core.replaceNodeStatus({
    name: "node-1",
    body: {
      ...node,
      status: {
        addresses: [{ type: "InternalIP", address: "127.0.0.1" }],
        daemonEndpoints: { kubeletEndpoint: { Port: kubelet.port } },
      },
    },
  });
  for (const body of [
    pod("on-node", ["agent-server"], "node-1"),
    pod("two-containers", ["agent-server", "proxy"], "node-1"),
    pod("unscheduled", ["agent-server"]),
  ]) {
    await env.core.createNamespacedPod({ namespace: ns, body });
  }
});
afterAll(async () => {
  await kubelet?.close();
  await env?.kube.close();
});

const log = async (name: string, query = "") => {
  const response = await fetch(`${env.kube.url}/api/v1/namespaces/${ns}/pods/${name}/log${query}`);
  const text = await response.text();
  return {
    status: response.status,
    body: response.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text,
  };
};

describe("pods/log", () => {
  it("forwards to the kubelet of the pod's node, with the client's parameters", async () => {
    expect(await log("on-node")).toEqual({ status: 200, body: "hello\n" });
    expect((await log("on-node", "?timestamps=true")).body).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z hello\n$/);
    expect(await env.core.readNamespacedPodLog({ namespace: ns, name: "on-node", container: "agent-server" })).toBe(
      "hello\n",
    );
  });

  it("refuses like the real API server: container to choose, unknown container, no node, no pod", async () => {
    expect(await log("two-containers")).toMatchObject({
      status: 400,
      body: {
        message: "a container name must be specified for pod two-containers, choose one of: [agent-server proxy]",
      },
    });
    expect((await log("on-node", "?container=nope")).status).toBe(400);
    expect(await log("unscheduled")).toMatchObject({
      status: 400,
      body: { message: "pod unscheduled does not have a host assigned" },
    });
    expect((await log("missing")).status).toBe(404);
    // The kubelet does not run this pod's container: its 404 comes through.
    expect((await log("two-containers", "?container=proxy")).status).toBe(404);
  });

  it("is advertised in discovery", async () => {
    const list = (await fetch(`${env.kube.url}/api/v1`).then((r) => r.json())) as { resources: { name: string }[] };
    expect(list.resources.map((r) => r.name)).toEqual(expect.arrayContaining(["pods/log", "nodes", "nodes/status"]));
  });
});
