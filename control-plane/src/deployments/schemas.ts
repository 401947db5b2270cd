import { DEPLOYMENT_STATUSES } from "@agentplane/crds";
import { z } from "zod";
import { apiSchemas } from "../schemas/registry.ts";

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

/** Env var names the platform sets itself (the reference's reserved list, minus the self-hosted-only ones). */
const RESERVED_SECRET_NAMES = new Set([
  "LANGCHAIN_TRACING_V2",
  "LANGSMITH_TRACING_V2",
  "LANGCHAIN_ENDPOINT",
  "LANGCHAIN_PROJECT",
  "LANGSMITH_PROJECT",
  "LANGSMITH_LANGGRAPH_GIT_REPO",
  "LANGGRAPH_GIT_REPO_PATH",
  "LANGCHAIN_API_KEY",
  "LANGSMITH_CONTROL_PLANE_API_KEY",
  "POSTGRES_URI",
  "POSTGRES_PASSWORD",
  "DATABASE_URI",
  "LANGSMITH_LANGGRAPH_GIT_REF",
  "LANGSMITH_LANGGRAPH_GIT_REF_SHA",
  "LANGGRAPH_AUTH_TYPE",
  "LANGSMITH_AUTH_ENDPOINT",
  "LANGSMITH_TENANT_ID",
  "LANGSMITH_AUTH_VERIFY_TENANT_ID",
  "LANGSMITH_HOST_PROJECT_ID",
  "LANGSMITH_HOST_PROJECT_NAME",
  "LANGSMITH_HOST_REVISION_ID",
  "LOG_JSON",
  "LOG_DICT_TRACEBACKS",
  "REDIS_URI",
  "LANGCHAIN_CALLBACKS_BACKGROUND",
  "DD_TRACE_PSYCOPG_ENABLED",
  "DD_TRACE_REDIS_ENABLED",
  "LANGSMITH_DEPLOYMENT_NAME",
  "LANGGRAPH_CLOUD_LICENSE_KEY",
]);

const envVarName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)")
  .max(253);

export const Secret = z
  .object({
    name: envVarName.refine((name) => !RESERVED_SECRET_NAMES.has(name), "is reserved for the platform"),
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

const dnsLabel = z
  .string()
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "must be a DNS-1123 label");
const dnsSubdomain = z
  .string()
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, "must be a DNS-1123 subdomain");

export const SecretReference = z
  .object({ name: envVarName, secret_name: dnsSubdomain, secret_key: z.string().regex(/^[-._a-zA-Z0-9]{1,253}$/) })
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

// Kubernetes-shaped parts of resource_spec keep Kubernetes spelling (camelCase), like the reference.
const VolumeMount = z.object({
  name: z.string().min(1),
  mountPath: z.string().min(1),
  subPath: z.string().optional(),
  subPathExpr: z.string().optional(),
  mountPropagation: z.string().optional(),
  readOnly: z.boolean().optional(),
});
const Container = z.looseObject({ name: dnsLabel, image: z.string().min(1) });
const Volume = z.looseObject({ name: dnsLabel });

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
    image_pull_secrets: z.array(z.object({ name: dnsSubdomain })).nullish(),
    volumes: z.array(Volume).nullish(),
    volume_mounts: z.array(VolumeMount).nullish(),
    init_containers: z.array(Container).nullish(),
    sidecars: z.array(Container).nullish(),
  })
  .refine((spec) => spec.min_scale == null || spec.max_scale == null || spec.min_scale <= spec.max_scale, {
    message: "min_scale must not exceed max_scale",
    path: ["min_scale"],
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
    secret_references: z.array(SecretReference).nullish(),
  })
  .register(apiSchemas, { id: "DeploymentCreateRequest" });
export type DeploymentCreateRequest = z.infer<typeof DeploymentCreateRequest>;

/** Fields that change what runs and therefore create a revision (also the body of POST .../revisions). */
const revisionFields = {
  source_config: SourceConfigRequest.nullish(),
  source_revision_config: SourceRevisionConfigRequest.nullish(),
  secrets: SecretList.nullish(),
  secret_references: z.array(SecretReference).nullish(),
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

export const DeploymentListQuery = z.object({
  ...pageQuery,
  name_contains: z.string().nullish(),
  name: z.string().nullish(),
  status: DeploymentStatus.nullish(),
});
export type DeploymentListQuery = z.infer<typeof DeploymentListQuery>;

export const DeploymentPath = z.object({ deployment_id: z.uuid() });

export const DeleteDeploymentQuery = z.object({ force: z.stringbool().default(false) });
