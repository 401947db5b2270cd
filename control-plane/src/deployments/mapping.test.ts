import { API_KEY_HASHES_KEY, agentDeploymentSchema, agentRevisionSchema } from "@agentplane/crds";
import { describe, expect, it } from "vitest";
import { buildAgentRevision, toRevisionResponse } from "../revisions/mapping.ts";
import {
  apiKeyHashesData,
  buildAgentDeployment,
  createsRevision,
  fromResources,
  immutableFieldChange,
  patchedSpec,
  revisionChangeOf,
  secretData,
  secretsChecksum,
  secretsFromData,
  toDeploymentResponse,
  toResources,
  withApiKeysSecret,
} from "./mapping.ts";
import { DeploymentCreateRequest, DeploymentPatchRequest } from "./schemas.ts";

const tenantId = "5b1f7c1e-8a4e-4d1a-9a57-1f2a3b4c5d6e";
const id = "0c8f2a6e-3d0e-4b8e-9a51-6f1b2c3d4e5f";
const revisionId = "7d2e4f60-1a2b-4c3d-8e9f-a0b1c2d3e4f5";
const now = "2026-11-22T06:00:00.123Z";

const request = DeploymentCreateRequest.parse({
  name: "my agent",
  source: "external_docker",
  source_config: {
    listener_config: { k8s_namespace: "agents" },
    resource_spec: { min_scale: 1, max_scale: 3, cpu: 0.5, memory_mb: 512, labels: { team: "a" } },
  },
  source_revision_config: { image_uri: "registry.example/agent:1" },
  secrets: [{ name: "OPENAI_API_KEY", value: "sk-1" }],
  secret_references: [{ name: "DB_PASSWORD", secret_name: "db", secret_key: "password" }],
});

const deployment = buildAgentDeployment({
  id,
  tenantId,
  namespace: "agents",
  revisionId,
  now,
  hasApiKeys: true,
  request: { ...request, source_revision_config: { image_uri: "registry.example/agent:1" } },
});

describe("deployment mapping", () => {
  it("builds an AgentDeployment the shared CRD schema accepts, holding no secret value", () => {
    expect(agentDeploymentSchema.safeParse(deployment).success).toBe(true);
    expect(JSON.stringify(deployment)).not.toContain("sk-1");
    expect(deployment.spec).toMatchObject({
      displayName: "my agent",
      revisionName: revisionId,
      template: { image: "registry.example/agent:1", secretName: `${id}-secrets-${revisionId}` },
      apiKeysSecretName: `${id}-api-keys`,
    });
    expect(deployment.spec.template.resources).toEqual({
      minScale: 1,
      maxScale: 3,
      cpu: 0.5,
      cpuLimit: 1,
      memoryMb: 512,
      memoryLimitMb: 1024,
      labels: { team: "a" },
    });
  });

  it("maps the resource back to the API shape with the secrets read from the Secret", () => {
    const secrets = secretsFromData(secretData(request.secrets));
    const response = toDeploymentResponse(deployment, secrets);
    expect(response).toMatchObject({
      id,
      tenant_id: tenantId,
      name: "my agent",
      source: "external_docker",
      secrets: [{ name: "OPENAI_API_KEY", value: "sk-1" }],
      secret_references: [{ name: "DB_PASSWORD", secret_name: "db", secret_key: "password" }],
      created_at: now,
      status: "AWAITING_DATABASE",
      latest_revision_id: revisionId,
      active_revision_id: null,
      url: null,
    });
    expect(response.source_config.listener_config).toEqual({ k8s_namespace: "agents" });
    expect(response.source_config.resource_spec).toMatchObject({ min_scale: 1, cpu_limit: 1, memory_limit_mb: 1024 });
    expect(fromResources(toResources(response.source_config.resource_spec ?? {}))).toEqual(
      response.source_config.resource_spec,
    );
  });

  it("derives status from the operator's status and the deletion timestamp", () => {
    const ready = {
      ...deployment,
      status: { deploymentStatus: "READY" as const, latestReadyRevision: revisionId, url: "http://x" },
    };
    expect(toDeploymentResponse(ready, [])).toMatchObject({
      status: "READY",
      active_revision_id: revisionId,
      url: "http://x",
    });
    const deleting = { ...ready, metadata: { ...ready.metadata, deletionTimestamp: now } };
    expect(toDeploymentResponse(deleting, []).status).toBe("AWAITING_DELETE");
  });

  it("creates a revision only for image, resources, secrets or secret references; empty secrets mean unchanged", () => {
    const change = (body: unknown) => revisionChangeOf(DeploymentPatchRequest.parse(body));
    expect(createsRevision(change({}))).toBe(false);
    expect(createsRevision(change({ secrets: [] }))).toBe(false);
    expect(createsRevision(change({ source_config: { custom_url: "https://a.example" } }))).toBe(false);
    expect(createsRevision(change({ source_revision_config: { image_uri: null } }))).toBe(false);
    expect(createsRevision(change({ source_revision_config: { image_uri: "img:2" } }))).toBe(true);
    expect(createsRevision(change({ secrets: [{ name: "A", value: "b" }] }))).toBe(true);
    expect(createsRevision(change({ source_config: { resource_spec: { cpu: 1 } } }))).toBe(true);
    expect(createsRevision(change({ secret_references: [] }))).toBe(true);
  });

  it("patches the spec in place and points it at the new revision", () => {
    const spec = patchedSpec(deployment.spec, { image: "img:2" }, "https://a.example", "new-rev");
    expect(spec.template.image).toBe("img:2");
    expect(spec.template.resources).toEqual(deployment.spec.template.resources);
    expect(spec.sourceConfig?.custom_url).toBe("https://a.example");
    expect(spec.revisionName).toBe("new-rev");
    expect(patchedSpec(deployment.spec, {}, undefined, undefined)).toEqual(deployment.spec);
  });

  it("points the spec at the API-key Secret only when there are keys, and writes one digest per line", () => {
    expect(withApiKeysSecret(deployment.spec, id, true)).toEqual(deployment.spec);
    const open = withApiKeysSecret(deployment.spec, id, false);
    expect(open).not.toHaveProperty("apiKeysSecretName");
    expect(withApiKeysSecret(open, id, true).apiKeysSecretName).toBe(`${id}-api-keys`);
    const hashes = ["a".repeat(64), "b".repeat(64)];
    const data = apiKeyHashesData(hashes);
    expect(Object.keys(data)).toEqual([API_KEY_HASHES_KEY]);
    expect(Buffer.from(data[API_KEY_HASHES_KEY] ?? "", "base64").toString("utf8")).toBe(`${hashes.join("\n")}\n`);
  });

  it("refuses changes to immutable fields but accepts the same values", () => {
    const check = (body: unknown) => immutableFieldChange(deployment, DeploymentPatchRequest.parse(body));
    expect(check({ name: "my agent", source: "external_docker" })).toBeUndefined();
    expect(check({ source_config: { listener_config: { k8s_namespace: "agents" } } })).toBeUndefined();
    expect(check({ name: "other" })).toMatch(/name/);
    expect(check({ source: "github" })).toMatch(/source/);
    expect(check({ revision_source: "github" })).toMatch(/revision_source/);
    expect(check({ source_config: { listener_config: { k8s_namespace: "elsewhere" } } })).toMatch(/listener_config/);
    expect(check({ source_config: { listener_id: "2b1f7c1e-8a4e-4d1a-9a57-1f2a3b4c5d6e" } })).toMatch(/listener_id/);
  });

  it("checksums secrets independently of their order", () => {
    const a = { name: "A", value: "1" };
    const b = { name: "B", value: "2" };
    expect(secretsChecksum([a, b])).toBe(secretsChecksum([b, a]));
    expect(secretsChecksum([a, b])).not.toBe(secretsChecksum([a, { ...b, value: "3" }]));
  });
});

describe("revision mapping", () => {
  const revision = buildAgentRevision({
    deployment: { ...deployment, metadata: { ...deployment.metadata, uid: "uid-1" } },
    revisionId,
    secretsChecksum: "abc",
    now,
  });

  it("snapshots the deployment template into an owned AgentRevision the CRD schema accepts", () => {
    expect(agentRevisionSchema.safeParse(revision).success).toBe(true);
    expect(revision.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: "AgentDeployment", name: id, uid: "uid-1", controller: true }),
    ]);
    expect(revision.spec.template).toEqual(deployment.spec.template);
  });

  it("shows CREATING until a status is written, and the latest transition as updated_at", () => {
    expect(toRevisionResponse(revision)).toMatchObject({
      id: revisionId,
      status: "CREATING",
      created_at: now,
      updated_at: now,
      source_revision_config: { image_uri: "registry.example/agent:1", repo_ref: null },
    });
    const later = "2026-11-22T07:00:00.000Z";
    const deployed = {
      ...revision,
      status: {
        revisionStatus: "DEPLOYED" as const,
        conditions: [
          { type: "Ready", status: "True" as const, reason: "Done", message: "", lastTransitionTime: later },
        ],
      },
    };
    expect(toRevisionResponse(deployed)).toMatchObject({ status: "DEPLOYED", updated_at: later });
  });
});
