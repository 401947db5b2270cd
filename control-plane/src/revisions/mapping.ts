import {
  AGENT_DEPLOYMENT_KIND,
  AGENT_REVISION_KIND,
  type AgentDeployment,
  type AgentRevision,
  API_VERSION,
  agentRevisionLabels,
  type RevisionStatus,
} from "@agentplane/crds";
import { ANNOTATION_CREATED_AT, createdAt } from "../deployments/mapping.ts";
import type { Revision } from "./schemas.ts";

export interface NewRevision {
  deployment: AgentDeployment;
  revisionId: string;
  secretsChecksum: string;
  now: string;
}

/** An immutable snapshot of what the deployment runs now, owned by the deployment (garbage-collected with it). */
export function buildAgentRevision({ deployment, revisionId, secretsChecksum, now }: NewRevision): AgentRevision {
  const { metadata, spec } = deployment;
  const deploymentId = metadata.name ?? "";
  return {
    apiVersion: API_VERSION,
    kind: AGENT_REVISION_KIND,
    metadata: {
      name: revisionId,
      namespace: metadata.namespace,
      labels: agentRevisionLabels(spec.tenantId, deploymentId, revisionId),
      annotations: { [ANNOTATION_CREATED_AT]: now },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: AGENT_DEPLOYMENT_KIND,
          name: deploymentId,
          uid: metadata.uid ?? "",
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      deploymentId,
      source: spec.source,
      sourceRevisionConfig: { image_uri: spec.template.image },
      template: spec.template,
      secretsChecksum,
    },
  };
}

/** A revision without status has been created but not yet handed to the operator. */
export const revisionStatus = (revision: AgentRevision): RevisionStatus =>
  revision.status?.revisionStatus ?? "CREATING";

export function toRevisionResponse(revision: AgentRevision): Revision {
  const created = createdAt(revision);
  const transitions = (revision.status?.conditions ?? []).map((c) => new Date(c.lastTransitionTime).toISOString());
  return {
    id: revision.metadata.name ?? "",
    created_at: created,
    updated_at: [created, ...transitions].sort().at(-1) ?? created,
    status: revisionStatus(revision),
    source: revision.spec.source,
    source_revision_config: {
      repo_ref: revision.spec.sourceRevisionConfig.repo_ref ?? null,
      langgraph_config_path: revision.spec.sourceRevisionConfig.langgraph_config_path ?? null,
      image_uri: revision.spec.sourceRevisionConfig.image_uri,
      source_tarball_path: null,
      repo_commit_sha: null,
    },
    status_message: revision.status?.message || null,
  };
}
