import { z } from "zod";
import {
  AGENT_DEPLOYMENT_KIND,
  AGENT_REVISION_KIND,
  API_VERSION,
  DEPLOYMENT_STATUSES,
  REVISION_STATUSES,
  SOURCES,
} from "./constants.ts";

// These schemas mirror the openAPIV3Schema in ../agentdeployments.yaml and ../agentrevisions.yaml
// (the source of truth); schemas.test.ts checks that both accept and reject the same objects.

const nonEmpty = z.string().min(1);
const stringMap = z.record(z.string(), z.string());

/** core/v1 Container, passed through to the pod spec; only name and image are checked. */
export const containerSchema = z.looseObject({ name: z.string(), image: z.string() });
/** core/v1 Volume, passed through to the pod spec; only the name is checked. */
export const volumeSchema = z.looseObject({ name: z.string() });

export const volumeMountSchema = z.object({
  name: z.string(),
  mountPath: z.string(),
  subPath: z.string().optional(),
  subPathExpr: z.string().optional(),
  mountPropagation: z.string().optional(),
  readOnly: z.boolean().optional(),
});

/** The API's resource_spec in Kubernetes spelling. */
export const resourcesSchema = z.object({
  minScale: z.int32().min(0).optional(),
  maxScale: z.int32().min(1).optional(),
  cpu: z.number().min(0.1).optional(),
  cpuLimit: z.number().min(0.1).optional(),
  memoryMb: z.int32().min(1).optional(),
  memoryLimitMb: z.int32().min(1).optional(),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
  serviceAccountName: z.string().optional(),
  imagePullSecrets: z.array(z.object({ name: z.string() })).optional(),
  volumes: z.array(volumeSchema).optional(),
  volumeMounts: z.array(volumeMountSchema).optional(),
  initContainers: z.array(containerSchema).optional(),
  sidecars: z.array(containerSchema).optional(),
});

export const secretReferenceSchema = z.object({ name: nonEmpty, secretName: nonEmpty, secretKey: nonEmpty });

/** What every new AgentRevision snapshots from its AgentDeployment. */
export const revisionTemplateSchema = z.object({
  image: nonEmpty,
  resources: resourcesSchema.optional(),
  secretName: z.string().optional(),
  secretReferences: z.array(secretReferenceSchema).optional(),
});

export const sourceConfigSchema = z.object({
  listener_id: z.string().nullish(),
  listener_config: z.object({ k8s_namespace: z.string().nullish() }).nullish(),
  custom_url: z.string().nullish(),
  build_on_push: z.boolean().nullish(),
  install_command: z.string().nullish(),
  build_command: z.string().nullish(),
});

export const conditionSchema = z.object({
  type: z
    .string()
    .max(316)
    .regex(
      /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/,
    ),
  status: z.enum(["True", "False", "Unknown"]),
  reason: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
  message: z.string().max(32768),
  lastTransitionTime: z.iso.datetime({ offset: true }),
  observedGeneration: z.int().min(0).optional(),
});

/** The subset of ObjectMeta the custom resources' users read and write. */
export const objectMetaSchema = z.looseObject({
  name: z.string().optional(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.int().optional(),
  creationTimestamp: z.string().optional(),
  deletionTimestamp: z.string().optional(),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
  finalizers: z.array(z.string()).optional(),
  ownerReferences: z
    .array(
      z.looseObject({
        apiVersion: z.string(),
        kind: z.string(),
        name: z.string(),
        uid: z.string(),
        controller: z.boolean().optional(),
        blockOwnerDeletion: z.boolean().optional(),
      }),
    )
    .optional(),
});

export const agentDeploymentSpecSchema = z.object({
  displayName: nonEmpty,
  tenantId: nonEmpty,
  source: z.enum(SOURCES),
  sourceConfig: sourceConfigSchema.optional(),
  revisionName: nonEmpty,
  template: revisionTemplateSchema,
  redis: z.object({ externalUrlSecretRef: z.object({ name: z.string(), key: z.string() }).optional() }).optional(),
  apiKeysSecretName: z.string().optional(),
});

export const agentDeploymentStatusSchema = z.object({
  observedGeneration: z.int().min(0).optional(),
  conditions: z.array(conditionSchema).optional(),
  latestCreatedRevision: z.string().optional(),
  latestReadyRevision: z.string().optional(),
  url: z.string().optional(),
  readyReplicas: z.int32().min(0).optional(),
  deploymentStatus: z.enum(DEPLOYMENT_STATUSES).optional(),
});

export const agentDeploymentSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(AGENT_DEPLOYMENT_KIND),
  metadata: objectMetaSchema,
  spec: agentDeploymentSpecSchema,
  status: agentDeploymentStatusSchema.optional(),
});

export const agentRevisionSpecSchema = z.object({
  deploymentId: nonEmpty,
  source: z.enum(SOURCES),
  sourceRevisionConfig: z.object({
    image_uri: nonEmpty,
    repo_ref: z.string().nullish(),
    langgraph_config_path: z.string().nullish(),
  }),
  template: revisionTemplateSchema,
  secretsChecksum: z.string().optional(),
});

export const agentRevisionStatusSchema = z.object({
  observedGeneration: z.int().min(0).optional(),
  revisionStatus: z.enum(REVISION_STATUSES).optional(),
  message: z.string().optional(),
  conditions: z.array(conditionSchema).optional(),
  readyReplicas: z.int32().min(0).optional(),
});

export const agentRevisionSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(AGENT_REVISION_KIND),
  metadata: objectMetaSchema,
  spec: agentRevisionSpecSchema,
  status: agentRevisionStatusSchema.optional(),
});

export type Container = z.infer<typeof containerSchema>;
export type Volume = z.infer<typeof volumeSchema>;
export type VolumeMount = z.infer<typeof volumeMountSchema>;
export type Resources = z.infer<typeof resourcesSchema>;
export type SecretReference = z.infer<typeof secretReferenceSchema>;
export type RevisionTemplate = z.infer<typeof revisionTemplateSchema>;
export type SourceConfig = z.infer<typeof sourceConfigSchema>;
export type Condition = z.infer<typeof conditionSchema>;
export type ObjectMeta = z.infer<typeof objectMetaSchema>;
export type AgentDeploymentSpec = z.infer<typeof agentDeploymentSpecSchema>;
export type AgentDeploymentStatus = z.infer<typeof agentDeploymentStatusSchema>;
export type AgentDeployment = z.infer<typeof agentDeploymentSchema>;
export type AgentRevisionSpec = z.infer<typeof agentRevisionSpecSchema>;
export type AgentRevisionStatus = z.infer<typeof agentRevisionStatusSchema>;
export type AgentRevision = z.infer<typeof agentRevisionSchema>;
