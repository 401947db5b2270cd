/** API group, version and names shared by the control plane, the operator and the chart. */
export const GROUP = "agentplane.dev";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;

export const AGENT_DEPLOYMENT_KIND = "AgentDeployment";
export const AGENT_DEPLOYMENT_PLURAL = "agentdeployments";
export const AGENT_REVISION_KIND = "AgentRevision";
export const AGENT_REVISION_PLURAL = "agentrevisions";

export const LABEL_TENANT_ID = `${GROUP}/tenant-id`;
export const LABEL_DEPLOYMENT_ID = `${GROUP}/deployment-id`;
export const LABEL_REVISION_ID = `${GROUP}/revision-id`;

/** Held by the operator on every AgentDeployment until it has removed the deployment's children. */
export const CLEANUP_FINALIZER = `${GROUP}/cleanup`;

/** Key of the Secret named by `spec.apiKeysSecretName`: SHA-256 hex digests, one per line. */
export const API_KEY_HASHES_KEY = "api-key-hashes";

export const REVISION_STATUSES = [
  "CREATING",
  "QUEUED",
  "AWAITING_BUILD",
  "BUILDING",
  "AWAITING_DEPLOY",
  "DEPLOYING",
  "CREATE_FAILED",
  "BUILD_FAILED",
  "DEPLOY_FAILED",
  "DEPLOYED",
  "SKIPPED",
  "INTERRUPTED",
  "UNKNOWN",
] as const;
export type RevisionStatus = (typeof REVISION_STATUSES)[number];

/** Statuses after which a revision never changes again. */
export const TERMINAL_REVISION_STATUSES: ReadonlySet<RevisionStatus> = new Set([
  "CREATE_FAILED",
  "BUILD_FAILED",
  "DEPLOY_FAILED",
  "DEPLOYED",
  "SKIPPED",
  "INTERRUPTED",
]);

export const DEPLOYMENT_STATUSES = [
  "AWAITING_DATABASE",
  "READY",
  "UNUSED",
  "AWAITING_DELETE",
  "AWAITING_FINAL_DELETE",
  "UNKNOWN",
] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

export const CONDITION_TYPES = ["Ready", "Progressing", "Degraded"] as const;
export type ConditionType = (typeof CONDITION_TYPES)[number];

export const SOURCES = ["external_docker"] as const;
