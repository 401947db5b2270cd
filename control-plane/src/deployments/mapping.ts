import { createHash } from "node:crypto";
import {
  AGENT_DEPLOYMENT_KIND,
  type AgentDeployment,
  type AgentDeploymentSpec,
  API_KEY_HASHES_KEY,
  API_VERSION,
  agentDeploymentLabels,
  type SecretReference as CrSecretReference,
  type DeploymentStatus,
  deploymentApiKeysSecretName,
  GROUP,
  type Resources,
  revisionSecretName,
} from "@agentplane/crds";
import { localListenerId } from "../listeners/local.ts";
import { withRestrictedSecurityContext } from "./pod-policy.ts";
import type {
  Deployment,
  DeploymentCreateRequest,
  DeploymentPatchRequest,
  ResourceSpec,
  RevisionCreateRequest,
  Secret,
  SecretReference,
} from "./schemas.ts";

export const ANNOTATION_CREATED_AT = `${GROUP}/created-at`;
export const ANNOTATION_UPDATED_AT = `${GROUP}/updated-at`;
/** Labels hold no free text, so name uniqueness per tenant is checked through a digest of the name. */
export const LABEL_NAME_HASH = `${GROUP}/name-hash`;

export const nameHash = (name: string) => createHash("sha256").update(name).digest("hex").slice(0, 63);

interface Stamped {
  metadata: { name?: string; annotations?: Record<string, string>; creationTimestamp?: string };
}

/** `creationTimestamp` has one-second resolution: ordering and `created_at` use the millisecond annotation. */
export function createdAt(object: Stamped): string {
  return object.metadata.annotations?.[ANNOTATION_CREATED_AT] ?? object.metadata.creationTimestamp ?? "";
}

/** Newest first, the order the API lists deployments and revisions in. */
export function newestFirst(a: Stamped, b: Stamped): number {
  const byTime = createdAt(b).localeCompare(createdAt(a));
  return byTime !== 0 ? byTime : (b.metadata.name ?? "").localeCompare(a.metadata.name ?? "");
}

/** API resource_spec → CR resources; unset limits default to twice the request, as the reference describes. */
export function toResources(spec: ResourceSpec): Resources {
  const resources: Resources = {
    minScale: spec.min_scale ?? undefined,
    maxScale: spec.max_scale ?? undefined,
    cpu: spec.cpu ?? undefined,
    cpuLimit: spec.cpu_limit ?? (spec.cpu == null ? undefined : Math.min(16, Math.round(spec.cpu * 20) / 10)),
    memoryMb: spec.memory_mb ?? undefined,
    memoryLimitMb: spec.memory_limit_mb ?? (spec.memory_mb == null ? undefined : spec.memory_mb * 2),
    labels: spec.labels ?? undefined,
    annotations: spec.annotations ?? undefined,
    serviceAccountName: spec.service_account_name ?? undefined,
    imagePullSecrets: spec.image_pull_secrets ?? undefined,
    volumes: spec.volumes ?? undefined,
    volumeMounts: spec.volume_mounts ?? undefined,
    initContainers: spec.init_containers?.map(withRestrictedSecurityContext),
    sidecars: spec.sidecars?.map(withRestrictedSecurityContext),
  };
  return Object.fromEntries(Object.entries(resources).filter(([, value]) => value !== undefined));
}

export function fromResources(resources: Resources | undefined): ResourceSpec | null {
  if (!resources) return null;
  return {
    min_scale: resources.minScale ?? null,
    max_scale: resources.maxScale ?? null,
    cpu: resources.cpu ?? null,
    cpu_limit: resources.cpuLimit ?? null,
    memory_mb: resources.memoryMb ?? null,
    memory_limit_mb: resources.memoryLimitMb ?? null,
    labels: resources.labels ?? null,
    annotations: resources.annotations ?? null,
    service_account_name: resources.serviceAccountName ?? null,
    image_pull_secrets: resources.imagePullSecrets ?? null,
    volumes: resources.volumes ?? null,
    // Stored by this API, so of its shape (the CR schema is looser).
    volume_mounts: (resources.volumeMounts as ResourceSpec["volume_mounts"]) ?? null,
    init_containers: resources.initContainers ?? null,
    sidecars: resources.sidecars ?? null,
  };
}

const toCrSecretReference = (ref: SecretReference): CrSecretReference => ({
  name: ref.name,
  secretName: ref.secret_name,
  secretKey: ref.secret_key,
});

const fromCrSecretReference = (ref: CrSecretReference): SecretReference => ({
  name: ref.name,
  secret_name: ref.secretName,
  secret_key: ref.secretKey,
});

/** Identifies the secret values a revision runs with, so a secret change is visible as a new checksum. */
export function secretsChecksum(secrets: Secret[]): string {
  const pairs = secrets.map((s) => [s.name, s.value]).sort(([a], [b]) => ((a ?? "") < (b ?? "") ? -1 : 1));
  return createHash("sha256").update(JSON.stringify(pairs)).digest("hex");
}

export function secretData(secrets: Secret[]): Record<string, string> {
  return Object.fromEntries(secrets.map((s) => [s.name, Buffer.from(s.value, "utf8").toString("base64")]));
}

export function secretsFromData(data: Record<string, string> | undefined): Secret[] {
  return Object.entries(data ?? {})
    .map(([name, value]) => ({ name, value: Buffer.from(value, "base64").toString("utf8") }))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** The data of the `<id>-api-keys` Secret: the SHA-256 hex digests the agent server reads, one per line. */
export function apiKeyHashesData(hashes: readonly string[]): Record<string, string> {
  return { [API_KEY_HASHES_KEY]: Buffer.from(`${hashes.join("\n")}\n`, "utf8").toString("base64") };
}

/**
 * The spec pointing at the deployment's API-key Secret when there are keys to accept, and at none
 * otherwise: an empty key file would leave the agent server open just the same, only less visibly.
 */
export function withApiKeysSecret(
  spec: AgentDeploymentSpec,
  deploymentId: string,
  hasKeys: boolean,
): AgentDeploymentSpec {
  const { apiKeysSecretName: _previous, ...rest } = spec;
  return hasKeys ? { ...rest, apiKeysSecretName: deploymentApiKeysSecretName(deploymentId) } : rest;
}

export interface NewDeployment {
  id: string;
  tenantId: string;
  namespace: string;
  revisionId: string;
  now: string;
  /** Whether some API-key grant covers the tenant, so the agent server gets an API-key Secret. */
  hasApiKeys: boolean;
  request: DeploymentCreateRequest & { source_revision_config: { image_uri: string } };
}

export function buildAgentDeployment({
  id,
  tenantId,
  namespace,
  revisionId,
  now,
  hasApiKeys,
  request,
}: NewDeployment): AgentDeployment {
  const { source_config: sourceConfig } = request;
  const spec: AgentDeploymentSpec = {
    displayName: request.name,
    tenantId,
    source: "external_docker",
    sourceConfig: { listener_id: sourceConfig.listener_id ?? null, custom_url: sourceConfig.custom_url ?? null },
    revisionName: revisionId,
    template: {
      image: request.source_revision_config.image_uri,
      resources: toResources(sourceConfig.resource_spec ?? {}),
      secretName: revisionSecretName(id, revisionId),
      secretReferences: (request.secret_references ?? []).map(toCrSecretReference),
    },
  };
  return {
    apiVersion: API_VERSION,
    kind: AGENT_DEPLOYMENT_KIND,
    metadata: {
      name: id,
      namespace,
      labels: { ...agentDeploymentLabels(tenantId, id), [LABEL_NAME_HASH]: nameHash(request.name) },
      annotations: { [ANNOTATION_CREATED_AT]: now, [ANNOTATION_UPDATED_AT]: now },
    },
    spec: withApiKeysSecret(spec, id, hasApiKeys),
  };
}

/** What a PATCH or a new revision changes; any field set here creates a revision. */
export interface RevisionChange {
  image?: string;
  resources?: Resources;
  secretReferences?: CrSecretReference[];
  /** The full new secret list (an empty list on PATCH means "unchanged" and never gets here). */
  secrets?: Secret[];
}

export function revisionChangeOf(body: RevisionCreateRequest): RevisionChange {
  const change: RevisionChange = {};
  if (body.source_revision_config?.image_uri) change.image = body.source_revision_config.image_uri;
  if (body.source_config?.resource_spec) change.resources = toResources(body.source_config.resource_spec);
  if (body.secret_references) change.secretReferences = body.secret_references.map(toCrSecretReference);
  if (body.secrets && body.secrets.length > 0) change.secrets = body.secrets;
  return change;
}

export const createsRevision = (change: RevisionChange) =>
  change.image !== undefined ||
  change.resources !== undefined ||
  change.secretReferences !== undefined ||
  change.secrets !== undefined;

/** The 400 message for a PATCH that tries to change a field fixed at creation, if it does. */
export function immutableFieldChange(deployment: AgentDeployment, body: DeploymentPatchRequest): string | undefined {
  const { spec, metadata } = deployment;
  const namespace = body.source_config?.listener_config?.k8s_namespace;
  const listenerId = body.source_config?.listener_id;
  if (body.name != null && body.name !== spec.displayName) return "Field 'name' cannot be changed.";
  if (body.source != null && body.source !== spec.source) return "Field 'source' cannot be changed.";
  if (body.revision_source != null) return "Field 'revision_source' is not supported for external_docker deployments.";
  if (listenerId != null && listenerId !== listenerOf(deployment))
    return "Field 'source_config.listener_id' cannot be changed.";
  if (namespace != null && namespace !== metadata.namespace)
    return "Field 'source_config.listener_config' cannot be changed.";
  return undefined;
}

/** The deployment spec after a PATCH: in-place fields plus, when `revisionId` is given, the new revision. */
export function patchedSpec(
  spec: AgentDeploymentSpec,
  change: RevisionChange,
  customUrl: string | undefined,
  revisionId: string | undefined,
): AgentDeploymentSpec {
  const template = { ...spec.template };
  if (change.image !== undefined) template.image = change.image;
  if (change.resources !== undefined) template.resources = change.resources;
  if (change.secretReferences !== undefined) template.secretReferences = change.secretReferences;
  return {
    ...spec,
    sourceConfig: customUrl === undefined ? spec.sourceConfig : { ...spec.sourceConfig, custom_url: customUrl },
    template,
    revisionName: revisionId ?? spec.revisionName,
  };
}

/** Deployments created before listeners existed name none: they run where the local listener deploys. */
const listenerOf = ({ spec }: AgentDeployment) => spec.sourceConfig?.listener_id ?? localListenerId(spec.tenantId);

export function deploymentStatus(deployment: AgentDeployment): DeploymentStatus {
  if (deployment.metadata.deletionTimestamp) return "AWAITING_DELETE";
  // Until the operator has written status, the deployment is still being provisioned.
  return deployment.status?.deploymentStatus ?? "AWAITING_DATABASE";
}

export function toDeploymentResponse(deployment: AgentDeployment, secrets: Secret[]): Deployment {
  const { metadata, spec, status } = deployment;
  const created = createdAt(deployment);
  return {
    id: metadata.name ?? "",
    tenant_id: spec.tenantId,
    name: spec.displayName,
    source: spec.source,
    source_config: {
      listener_id: listenerOf(deployment),
      listener_config: { k8s_namespace: metadata.namespace ?? null },
      custom_url: spec.sourceConfig?.custom_url ?? null,
      resource_spec: fromResources(spec.template.resources),
    },
    source_revision_config: {
      repo_ref: null,
      langgraph_config_path: null,
      image_uri: spec.template.image,
      source_tarball_path: null,
      repo_commit_sha: null,
    },
    secrets,
    secret_references: spec.template.secretReferences?.map(fromCrSecretReference) ?? null,
    created_at: created,
    updated_at: metadata.annotations?.[ANNOTATION_UPDATED_AT] ?? created,
    status: deploymentStatus(deployment),
    latest_revision_id: spec.revisionName,
    active_revision_id: status?.latestReadyRevision ?? null,
    image_version: null,
    url: status?.url ?? null,
  };
}
