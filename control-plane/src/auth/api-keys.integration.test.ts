import { Writable } from "node:stream";
import { hashApiKey, listen } from "@agentplane/common";
import { deploymentApiKeysSecretName } from "@agentplane/crds";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createControlPlane } from "../app.ts";
import type { ControlPlaneConfig } from "../config.ts";
import { apiKeyHashesOf, bearer, call, controlPlaneConfig, deploymentBody, type Harness } from "../testing/harness.ts";
import type { OperatorStandIn } from "../testing/operator-stand-in.ts";
import { useHarness } from "../testing/suite.ts";

// Agent servers deployed by the control plane accept the workspace's API keys: the control plane keeps
// their hashes in a per-deployment Secret that the operator mounts.
let h: Harness;
let operator: OperatorStandIn;
useHarness((started) => ({ h, operator } = started));

describe("agent server API keys", () => {
  /** A control plane on the same cluster with other grants, logging into `lines`. */
  const controlPlaneWith = async (config: Partial<ControlPlaneConfig>, lines: string[]) => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...chunk.toString().split("\n").filter(Boolean));
        done();
      },
    });
    const plane = createControlPlane({ ...controlPlaneConfig(h.cluster.kubeconfigPath, h.ids), ...config }, pino(sink));
    plane.start();
    const server = await listen(plane.app, 0, "127.0.0.1");
    return {
      url: server.url,
      close: async () => {
        await server.close(5_000);
        await plane.stop();
      },
    };
  };

  it("refreshes the key Secret from today's grants on PATCH, new revision and redeploy", async () => {
    const d = await h.createDeployment("key-rotation");
    const rotated = `key-rotated-${crypto.randomUUID()}`;
    const grants = [{ ...(h.ids.grants[0] as (typeof h.ids.grants)[number]), hash: hashApiKey(rotated) }];
    const lines: string[] = [];
    const plane = await controlPlaneWith({ apiKeys: grants }, lines);
    try {
      const headers = { "x-api-key": rotated };
      const patched = await call(plane.url, "PATCH", `/v2/deployments/${d.id}`, {
        headers,
        body: { source_revision_config: { image_uri: "registry.example/agent:2" } },
      });
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      expect(await apiKeyHashesOf(h.cluster, d.id)).toEqual([hashApiKey(rotated)]);
      expect(JSON.stringify(patched.body)).not.toContain(hashApiKey(rotated));
      expect((await operator.deployment("agents", d.id)).spec.apiKeysSecretName).toBe(
        deploymentApiKeysSecretName(d.id),
      );
      expect(lines.join("\n")).not.toContain(hashApiKey(rotated));
    } finally {
      await plane.close();
    }
    // Back on the original grants: a new revision and a redeploy each rewrite the Secret.
    const original = [hashApiKey(h.ids.keys.a1), hashApiKey(h.ids.keys.multi)].sort();
    const revision = await h.api("POST", `/v2/deployments/${d.id}/revisions`, {
      body: { source_revision_config: { image_uri: "registry.example/agent:3" } },
    });
    expect(revision.status, JSON.stringify(revision.body)).toBe(201);
    expect(await apiKeyHashesOf(h.cluster, d.id)).toEqual(original);
    const plane2 = await controlPlaneWith({ apiKeys: grants }, []);
    try {
      const redeployed = await call(
        plane2.url,
        "POST",
        `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}/redeploy`,
        { headers: { "x-api-key": rotated } },
      );
      expect(redeployed.status, JSON.stringify(redeployed.body)).toBe(200);
      expect(await apiKeyHashesOf(h.cluster, d.id)).toEqual([hashApiKey(rotated)]);
    } finally {
      await plane2.close();
    }
  });

  it("without a grant for the workspace leaves the agent server open, with one warning per deployment", async () => {
    const lines: string[] = [];
    const plane = await controlPlaneWith({ apiKeys: [] }, lines);
    try {
      const token = await bearer({ organization_id: h.ids.orgA, workspace_ids: [h.ids.wsA1] });
      const headers = { authorization: `Bearer ${token}` };
      const created = await call(plane.url, "POST", "/v2/deployments", { headers, body: deploymentBody("jwt-only") });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = created.body.id as string;
      expect((await operator.deployment("agents", id)).spec).not.toHaveProperty("apiKeysSecretName");
      expect(await apiKeyHashesOf(h.cluster, id)).toBeUndefined();
      const patched = await call(plane.url, "PATCH", `/v2/deployments/${id}`, {
        headers,
        body: { source_revision_config: { image_uri: "registry.example/agent:2" } },
      });
      expect(patched.status).toBe(200);
      const warnings = lines.map((line) => JSON.parse(line)).filter((entry) => entry.deploymentId === id);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ level: 40, tenantId: h.ids.wsA1 });
      expect(warnings[0].msg).toMatch(/unauthenticated/);

      // A deployment that had keys loses its Secret once no grant covers it any more.
      const keyed = await h.createDeployment("keys-revoked");
      expect(await apiKeyHashesOf(h.cluster, keyed.id)).toHaveLength(2);
      const revoked = await call(plane.url, "PATCH", `/v2/deployments/${keyed.id}`, {
        headers,
        body: { source_revision_config: { image_uri: "registry.example/agent:2" } },
      });
      expect(revoked.status).toBe(200);
      expect((await operator.deployment("agents", keyed.id)).spec).not.toHaveProperty("apiKeysSecretName");
      expect(await apiKeyHashesOf(h.cluster, keyed.id)).toBeUndefined();
    } finally {
      await plane.close();
    }
  });
});
