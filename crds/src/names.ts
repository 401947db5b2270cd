import { LABEL_DEPLOYMENT_ID, LABEL_REVISION_ID, LABEL_TENANT_ID } from "./constants.ts";

/** The AgentDeployment's `metadata.name` is the control-plane deployment id (a uuid is a valid DNS-1123 name). */
export function agentDeploymentName(deploymentId: string): string {
  return deploymentId;
}

/** The AgentRevision's `metadata.name` is the control-plane revision id. */
export function agentRevisionName(revisionId: string): string {
  return revisionId;
}

/**
 * The Secret holding a deployment's API `secrets` as env vars (values never go into a custom
 * resource), as written before secrets were kept per revision (`revisionSecretName`).
 */
export function deploymentSecretName(deploymentId: string): string {
  return `${deploymentId}-secrets`;
}

/**
 * The Secret holding the `secrets` one revision runs with (its `template.secretName`): a snapshot per
 * revision, so pods of an older revision never pick up values written for a newer one.
 */
export function revisionSecretName(deploymentId: string, revisionId: string): string {
  return `${deploymentId}-secrets-${revisionId}`;
}

/** The Secret named by `spec.apiKeysSecretName`: the API-key hashes the deployment's agent server accepts. */
export function deploymentApiKeysSecretName(deploymentId: string): string {
  return `${deploymentId}-api-keys`;
}

export function agentDeploymentLabels(tenantId: string, deploymentId: string): Record<string, string> {
  return { [LABEL_TENANT_ID]: tenantId, [LABEL_DEPLOYMENT_ID]: deploymentId };
}

export function agentRevisionLabels(
  tenantId: string,
  deploymentId: string,
  revisionId: string,
): Record<string, string> {
  return { ...agentDeploymentLabels(tenantId, deploymentId), [LABEL_REVISION_ID]: revisionId };
}
