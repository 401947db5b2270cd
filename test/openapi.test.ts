import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exampleConfig, startTestServer } from "../agent-server/src/graphs/testing/server.ts";
import type { AgentServer } from "../agent-server/src/server.ts";
import { type RunningControlPlane, startControlPlane } from "../control-plane/src/app.ts";
import {
  type Cluster,
  call,
  controlPlaneConfig,
  identities,
  startTestCluster,
} from "../control-plane/src/testing/harness.ts";
import { testRedisUrl, uniquePrefix } from "../testing/redis.ts";

// Both services in one process, as in this suite or a combined dev server: each OpenAPI document
// must list its own named components only, not every schema the process has registered.
let agentServer: AgentServer;
let cluster: Cluster;
let controlPlane: RunningControlPlane;

beforeAll(async () => {
  agentServer = await startTestServer(exampleConfig, { redisUrl: testRedisUrl(), prefix: uniquePrefix("openapi") });
  cluster = await startTestCluster();
  controlPlane = await startControlPlane(controlPlaneConfig(cluster.kubeconfigPath, identities()));
});
afterAll(async () => {
  await agentServer?.close();
  await controlPlane?.close();
  await cluster?.close();
});

const components = async (url: string) => {
  const { status, body } = await call(url, "GET", "/openapi.json");
  expect(status).toBe(200);
  return Object.keys(body.components.schemas);
};

describe("OpenAPI documents of services sharing a process", () => {
  it("each carry only their own service's components", async () => {
    const agent = await components(agentServer.url);
    const controlPlaneSchemas = await components(controlPlane.url);
    expect(agent).toEqual(expect.arrayContaining(["Thread", "Assistant", "Run", "Cron"]));
    expect(controlPlaneSchemas).toEqual(expect.arrayContaining(["Deployment", "DeploymentCreateRequest", "Revision"]));
    for (const name of ["Deployment", "DeploymentCreateRequest", "Revision", "OAuthProviderResponse"]) {
      expect(agent).not.toContain(name);
    }
    for (const name of ["Thread", "Assistant", "Run", "Cron", "Item"]) {
      expect(controlPlaneSchemas).not.toContain(name);
    }
  });
});
