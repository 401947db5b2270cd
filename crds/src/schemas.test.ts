import { describe, expect, it } from "vitest";
import { validateAndPrune } from "../../testing/kube-apiserver/schema-validation.ts";
import { DEPLOYMENT_STATUSES, GROUP, REVISION_STATUSES, VERSION } from "./constants.ts";
import { type CrdManifest, loadCrdManifests } from "./manifests.ts";
import { agentDeploymentLabels, agentRevisionLabels, deploymentSecretName } from "./names.ts";
import {
  type AgentDeployment,
  type AgentRevision,
  agentDeploymentSchema,
  agentRevisionSchema,
  type Condition,
} from "./schemas.ts";

const manifests = loadCrdManifests();
const crd = (plural: string) => manifests.find((m) => m.spec.names.plural === plural) as CrdManifest;
const openApi = (plural: string) => crd(plural).spec.versions[0]!.schema.openAPIV3Schema;

const deploymentId = "0b6f7a3e-1c0e-4f5e-9a51-6a2f1b9c3d11";
const revisionId = "5d1c2b3a-9e8f-4a7b-8c6d-5e4f3a2b1c0d";
const template = {
  image: "registry.example/agent:1",
  resources: {
    minScale: 1,
    maxScale: 3,
    cpu: 0.5,
    cpuLimit: 1,
    memoryMb: 512,
    memoryLimitMb: 1024,
    labels: { team: "a" },
    annotations: { note: "x" },
    serviceAccountName: "agent",
    imagePullSecrets: [{ name: "pull" }],
    volumes: [{ name: "data", emptyDir: { sizeLimit: "1Gi" } }],
    volumeMounts: [{ name: "data", mountPath: "/data", readOnly: true }],
    initContainers: [{ name: "init", image: "busybox", command: ["true"] }],
    sidecars: [{ name: "proxy", image: "envoy", env: [{ name: "A", value: "1" }] }],
  },
  secretName: deploymentSecretName(deploymentId),
  secretReferences: [{ name: "OPENAI_API_KEY", secretName: "openai", secretKey: "key" }],
};
const condition: Condition = {
  type: "Ready",
  status: "True",
  reason: "RolloutComplete",
  message: "",
  lastTransitionTime: "2026-01-01T00:00:00Z",
  observedGeneration: 2,
};

const deployment: AgentDeployment = {
  apiVersion: `${GROUP}/${VERSION}`,
  kind: "AgentDeployment",
  metadata: { name: deploymentId, namespace: "agents", labels: agentDeploymentLabels("t1", deploymentId) },
  spec: {
    displayName: "my-agent",
    tenantId: "t1",
    source: "external_docker",
    sourceConfig: { listener_id: null, listener_config: { k8s_namespace: "agents" }, custom_url: null },
    revisionName: revisionId,
    template,
    redis: { externalUrlSecretRef: { name: "redis", key: "url" } },
    apiKeysSecretName: "keys",
  },
  status: {
    observedGeneration: 2,
    conditions: [condition],
    latestCreatedRevision: revisionId,
    latestReadyRevision: revisionId,
    url: "http://x.agents.svc:8000",
    readyReplicas: 1,
    deploymentStatus: "READY",
  },
};

const revision: AgentRevision = {
  apiVersion: `${GROUP}/${VERSION}`,
  kind: "AgentRevision",
  metadata: { name: revisionId, namespace: "agents", labels: agentRevisionLabels("t1", deploymentId, revisionId) },
  spec: {
    deploymentId,
    source: "external_docker",
    sourceRevisionConfig: { image_uri: "registry.example/agent:1", repo_ref: null },
    template,
    secretsChecksum: "abc",
  },
  status: { observedGeneration: 1, revisionStatus: "DEPLOY_FAILED", message: "image pull error", readyReplicas: 0 },
};

type Mutation = [name: string, mutate: (o: any) => void, valid: boolean];

const shared: Mutation[] = [
  ["unchanged", () => {}, true],
  ["without status", (o) => delete o.status, true],
  ["unknown spec field (pruned / stripped)", (o) => (o.spec.extra = 1), true],
  ["free-form volume fields kept", (o) => (o.spec.template.resources.volumes[0].nfs = { server: "s" }), true],
  ["without spec", (o) => delete o.spec, false],
  ["template without image", (o) => delete o.spec.template.image, false],
  ["empty image", (o) => (o.spec.template.image = ""), false],
  ["unknown source", (o) => (o.spec.source = "github"), false],
  ["fractional minScale", (o) => (o.spec.template.resources.minScale = 1.5), false],
  ["negative minScale", (o) => (o.spec.template.resources.minScale = -1), false],
  ["maxScale 0", (o) => (o.spec.template.resources.maxScale = 0), false],
  ["cpu below 0.1", (o) => (o.spec.template.resources.cpu = 0.05), false],
  ["memoryMb as string", (o) => (o.spec.template.resources.memoryMb = "512"), false],
  ["label value not a string", (o) => (o.spec.template.resources.labels = { a: 1 }), false],
  ["volume without name", (o) => (o.spec.template.resources.volumes = [{ emptyDir: {} }]), false],
  ["sidecar without image", (o) => (o.spec.template.resources.sidecars = [{ name: "s" }]), false],
  ["volumeMount without mountPath", (o) => (o.spec.template.resources.volumeMounts = [{ name: "d" }]), false],
  ["secret reference without key", (o) => delete o.spec.template.secretReferences[0].secretKey, false],
  ["imagePullSecrets not a list", (o) => (o.spec.template.resources.imagePullSecrets = "pull"), false],
  ["null image", (o) => (o.spec.template.image = null), false],
];

const deploymentCases: Mutation[] = [
  ...shared,
  ["condition with bad status", (o) => (o.status.conditions[0].status = "Yes"), false],
  ["condition reason with spaces", (o) => (o.status.conditions[0].reason = "not camel"), false],
  ["condition without lastTransitionTime", (o) => delete o.status.conditions[0].lastTransitionTime, false],
  ["condition with a bad time", (o) => (o.status.conditions[0].lastTransitionTime = "yesterday"), false],
  ["unknown deploymentStatus", (o) => (o.status.deploymentStatus = "RUNNING"), false],
  ["empty displayName", (o) => (o.spec.displayName = ""), false],
  ["without revisionName", (o) => delete o.spec.revisionName, false],
  ["without tenantId", (o) => delete o.spec.tenantId, false],
  ["external redis ref without key", (o) => (o.spec.redis.externalUrlSecretRef = { name: "r" }), false],
  ["null custom_url", (o) => (o.spec.sourceConfig.custom_url = null), true],
  ["namespace as number", (o) => (o.spec.sourceConfig.listener_config.k8s_namespace = 3), false],
];

const revisionCases: Mutation[] = [
  ...shared,
  ["each revision status", (o) => (o.status.revisionStatus = "SKIPPED"), true],
  ["unknown revision status", (o) => (o.status.revisionStatus = "RUNNING"), false],
  ["without image_uri", (o) => delete o.spec.sourceRevisionConfig.image_uri, false],
  ["without deploymentId", (o) => delete o.spec.deploymentId, false],
  ["negative readyReplicas", (o) => (o.status.readyReplicas = -1), false],
];

function agree(plural: string, zodSchema: typeof agentDeploymentSchema | typeof agentRevisionSchema, sample: object) {
  return (_name: string, mutate: (o: any) => void, valid: boolean) => {
    const object = structuredClone(sample);
    mutate(object);
    const parsed = zodSchema.safeParse(structuredClone(object));
    const check = validateAndPrune(openApi(plural), object);
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(valid);
    expect(check.errors.length === 0, JSON.stringify(check.errors)).toBe(valid);
    if (valid) expect(object).toEqual(parsed.data); // pruning by the schema == stripping by zod
  };
}

describe("AgentDeployment: zod schema and CRD openAPIV3Schema agree", () => {
  it.each(deploymentCases)("%s", agree("agentdeployments", agentDeploymentSchema, deployment));
});

describe("AgentRevision: zod schema and CRD openAPIV3Schema agree", () => {
  it.each(revisionCases)("%s", agree("agentrevisions", agentRevisionSchema, revision));

  it("declares spec immutable", () => {
    const changed = structuredClone(revision);
    changed.spec.template.image = "other";
    expect(validateAndPrune(openApi("agentrevisions"), changed, revision).errors[0]?.field).toBe("spec");
  });
});

describe("CRD manifests", () => {
  it("share one template schema", () => {
    const deploymentTemplate = openApi("agentdeployments").properties?.spec?.properties?.template;
    expect(openApi("agentrevisions").properties?.spec?.properties?.template).toEqual(deploymentTemplate);
  });

  it("list the status values of the constants", () => {
    expect(openApi("agentrevisions").properties?.status?.properties?.revisionStatus?.enum).toEqual([
      ...REVISION_STATUSES,
    ]);
    expect(openApi("agentdeployments").properties?.status?.properties?.deploymentStatus?.enum).toEqual([
      ...DEPLOYMENT_STATUSES,
    ]);
  });

  it.each([
    ["agentdeployments", "agd", ["Revision", "Status", "URL", "Ready", "Age"]],
    ["agentrevisions", "agr", ["Deployment", "Status", "Image", "Age"]],
  ])("%s: names, status subresource and printer columns", (plural, shortName, columns) => {
    const manifest = crd(plural);
    expect(manifest.metadata.name).toBe(`${plural}.${GROUP}`);
    expect(manifest.spec.names.shortNames).toEqual([shortName]);
    expect(manifest.spec.names.categories).toContain("agentplane");
    const version = manifest.spec.versions[0]!;
    expect(version.name).toBe(VERSION);
    expect(version.subresources).toEqual({ status: {} });
    expect(version.additionalPrinterColumns?.map((c) => c.name)).toEqual(columns);
  });
});
