import { DEPLOYMENT_STATUSES } from "@agentplane/crds";
import { z } from "zod";
import { apiSchemas } from "../schemas/registry.ts";
import {
  agentEnvVarName,
  dnsLabel,
  dnsSubdomain,
  PolicyInitContainer,
  PolicySidecar,
  PolicyVolume,
  PolicyVolumeMount,
} from "./pod-policy.ts";
import { podFieldIssues } from "./pod-rules.ts";

/** Every source the LangSmith API knows; this control plane deploys `external_docker` only (others get 400). */
export const API_SOURCES = [
  "github",
  "external_docker",
  "internal_docker",
  "internal_source",
  "internal_template",
] as const;
export const Source = z.enum(API_SOURCES).register(apiSchemas, { id: "Source" });

export const DeploymentStatus = z.enum(DEPLOYMENT_STATUSES).register(apiSchemas, { id: "DeploymentStatus" });

export const Secret = z
  .object({
    name: agentEnvVarName,
    value: z.string(),
  })
  .register(apiSchemas, { id: "Secret" });
export type Secret = z.infer<typeof Secret>;

/** Kubernetes Secrets hold at most 1 MiB; keep room for keys and encoding. */
const SECRETS_MAX_BYTES = 512 * 1024;
export const SecretList = z
  .array(Secret)
  .max(500)
  .refine((list) => new Set(list.map((s) => s.name)).size === list.length, "secret names must be unique")
  .refine(
    (list) => list.reduce((sum, s) => sum + Buffer.byteLength(s.value), 0) <= SECRETS_MAX_BYTES,
    `secret values must total at most ${SECRETS_MAX_BYTES} bytes`,
  );

export const SecretReference = z
  .object({ name: agentEnvVarName, secret_name: dnsSubdomain, secret_key: z.string().regex(/^[-._a-zA-Z0-9]{1,253}$/) })
  .register(apiSchemas, { id: "SecretReference" });
export type SecretReference = z.infer<typeof SecretReference>;

const labelValue = z
  .string()
  .max(63)
  .regex(/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/, "must be a valid label value");
const metadataKey = z
  .string()
  .max(316)
  .regex(
    /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/,
    "must be a qualified name",
  );

// Kubernetes-shaped parts of resource_spec keep Kubernetes spelling (camelCase), like the reference,
// and are limited to what pod-policy.ts allows.
const HOST_NAMESPACES = "the host's namespaces are not available to deployments";

const cpu = (max: number) => z.number().min(0.1).max(max);

export const ResourceSpec = z
  .object({
    min_scale: z.int().min(0).max(1000).nullish(),
    max_scale: z.int().min(1).max(1000).nullish(),
    cpu: cpu(8).nullish(),
    cpu_limit: cpu(16).nullish(),
    memory_mb: z.int().min(1).max(1_048_576).nullish(),
    memory_limit_mb: z.int().min(1).max(1_048_576).nullish(),
    labels: z.record(metadataKey, labelValue).nullish(),
    annotations: z.record(metadataKey, z.string()).nullish(),
    service_account_name: dnsSubdomain.nullish(),
    image_pull_secrets: z
      .array(z.object({ name: dnsSubdomain }))
      .max(16)
      .nullish(),
    volumes: z.array(PolicyVolume).max(64).nullish(),
    volume_mounts: z.array(PolicyVolumeMount).max(64).nullish(),
    init_containers: z.array(PolicyInitContainer).max(16).nullish(),
    sidecars: z.array(PolicySidecar).max(16).nullish(),
    hostNetwork: z.never({ error: HOST_NAMESPACES }).optional(),
    hostPID: z.never({ error: HOST_NAMESPACES }).optional(),
    hostIPC: z.never({ error: HOST_NAMESPACES }).optional(),
  })
  .refine((spec) => spec.min_scale == null || spec.max_scale == null || spec.min_scale <= spec.max_scale, {
    message: "min_scale must not exceed max_scale",
    path: ["min_scale"],
  })
  .superRefine((spec, ctx) => {
    for (const issue of podFieldIssues(spec, [])) ctx.addIssue({ code: "custom", message: issue.msg, path: issue.loc });
  })
  .register(apiSchemas, { id: "ResourceSpec" });
export type ResourceSpec = z.infer<typeof ResourceSpec>;

export const ListenerConfig = z
  .object({ k8s_namespace: dnsLabel.nullish() })
  .register(apiSchemas, { id: "ListenerConfig" });

export const SourceConfigRequest = z
  .object({
    listener_id: z.uuid().nullish(),
    listener_config: ListenerConfig.nullish(),
    custom_url: z.url({ protocol: /^https?$/ }).nullish(),
    resource_spec: ResourceSpec.nullish(),
  })
  .register(apiSchemas, { id: "SourceConfigRequest" });
export type SourceConfigRequest = z.infer<typeof SourceConfigRequest>;

const imageUri = z
  .string()
  .min(1)
  .max(1024)
  .regex(/^[^\s]+$/, "must be an image reference without whitespace");

export const SourceRevisionConfigRequest = z
  .object({ image_uri: imageUri.nullish() })
  .register(apiSchemas, { id: "SourceRevisionConfigRequest" });

export const SourceConfig = z
  .object({
    listener_id: z.string().nullable(),
    listener_config: z.object({ k8s_namespace: z.string().nullable() }).nullable(),
    custom_url: z.string().nullable(),
    resource_spec: ResourceSpec.nullable(),
  })
  .register(apiSchemas, { id: "SourceConfig" });
export type SourceConfig = z.infer<typeof SourceConfig>;

export const SourceRevisionConfig = z
  .object({
    repo_ref: z.string().nullable(),
    langgraph_config_path: z.string().nullable(),
    image_uri: z.string().nullable(),
    source_tarball_path: z.string().nullable(),
    repo_commit_sha: z.string().nullable(),
  })
  .register(apiSchemas, { id: "SourceRevisionConfig" });
export type SourceRevisionConfig = z.infer<typeof SourceRevisionConfig>;

export const DeploymentCreateRequest = z
  .object({
    name: z.string().trim().min(1).max(253),
    source: Source,
    source_config: SourceConfigRequest,
    source_revision_config: SourceRevisionConfigRequest,
    secrets: SecretList,
    secret_references: z.array(SecretReference).max(256).nullish(),
  })
  .register(apiSchemas, { id: "DeploymentCreateRequest" });
export type DeploymentCreateRequest = z.infer<typeof DeploymentCreateRequest>;

/** Fields that change what runs and therefore create a revision (also the body of POST .../revisions). */
const revisionFields = {
  source_config: SourceConfigRequest.nullish(),
  source_revision_config: SourceRevisionConfigRequest.nullish(),
  secrets: SecretList.nullish(),
  secret_references: z.array(SecretReference).max(256).nullish(),
};

export const DeploymentPatchRequest = z
  .object({
    ...revisionFields,
    // Immutable: accepted so that a changed value is refused with 400 rather than silently ignored.
    name: z.string().nullish(),
    source: Source.nullish(),
    revision_source: z.enum(["github", "internal_docker", "internal_source"]).nullish(),
  })
  .register(apiSchemas, { id: "DeploymentPatchRequest" });
export type DeploymentPatchRequest = z.infer<typeof DeploymentPatchRequest>;

export const RevisionCreateRequest = z.object(revisionFields).register(apiSchemas, { id: "RevisionCreateRequest" });
export type RevisionCreateRequest = z.infer<typeof RevisionCreateRequest>;

export const Deployment = z
  .object({
    id: z.uuid(),
    tenant_id: z.string(),
    name: z.string(),
    source: Source,
    source_config: SourceConfig,
    source_revision_config: SourceRevisionConfig,
    secrets: z.array(Secret),
    secret_references: z.array(SecretReference).nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
    status: DeploymentStatus,
    latest_revision_id: z.uuid().nullable(),
    active_revision_id: z.uuid().nullable(),
    image_version: z.string().nullable(),
    url: z.string().nullable(),
  })
  .register(apiSchemas, { id: "Deployment" });
export type Deployment = z.infer<typeof Deployment>;

export const DeploymentsList = z
  .object({ resources: z.array(Deployment), offset: z.int() })
  .register(apiSchemas, { id: "DeploymentsList" });

export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).default(0),
};

/** Every deployment type the LangSmith API knows (Cloud only: no deployment of this control plane has one). */
export const DEPLOYMENT_TYPES = ["dev_free", "dev", "prod", "dev_zero", "dev_free_zero"] as const;

/**
 * A list of UUIDs in a query parameter: comma-separated (`?ids=a,b`, as GET /v2/deployments defines
 * it) or repeated (`?ids=a&ids=b`, FastAPI's list style that DELETE /v2/deployments uses), or both.
 */
export const uuidListParam = (max: number, min = 0) =>
  z
    .union([
      z.string(),
      z.array(z.string()),
      // The query parser turns more than 20 repetitions into an object keyed by position.
      z.record(z.string().regex(/^\d+$/), z.string()).transform((byIndex) => Object.values(byIndex)),
    ])
    .transform((value) =>
      (Array.isArray(value) ? value : [value])
        .flatMap((part) => part.split(","))
        .map((part) => part.trim().toLowerCase())
        .filter(Boolean),
    )
    .pipe(z.array(z.uuid()).min(min).max(max));

/** `true`/`false` (and 1/0, yes/no, on/off) in a query string. */
const queryBool = z.stringbool();

export const DeploymentListQuery = z.object({
  ...pageQuery,
  name_contains: z.string().nullish(),
  name: z.string().nullish(),
  status: DeploymentStatus.nullish(),
  deployment_ids: uuidListParam(1000).nullish(),
  deployment_type: z.enum(DEPLOYMENT_TYPES).nullish(),
  image_version: z.string().nullish(),
  tag_value_ids: uuidListParam(1000).nullish(),
  remote_reconciled: queryBool.nullish(),
});
export type DeploymentListQuery = z.infer<typeof DeploymentListQuery>;

export const DeploymentPath = z.object({ deployment_id: z.uuid() });

export const DeleteDeploymentQuery = z.object({ force: queryBool.default(false) });

export const BulkDeleteQuery = z.object({ deployment_ids: uuidListParam(100, 1) });

export const BulkDeleteFailure = z
  .object({ deployment_id: z.uuid(), status: z.int(), detail: z.string() })
  .register(apiSchemas, { id: "BulkDeleteFailure" });

/** Bulk delete: the ids whose deletion started and, per id that failed, the status and detail a single DELETE gives. */
export const BulkDeleteResponse = z
  .object({ deleted: z.array(z.uuid()), failed: z.array(BulkDeleteFailure) })
  .register(apiSchemas, { id: "BulkDeleteResponse" });
export type BulkDeleteResponse = z.infer<typeof BulkDeleteResponse>;
