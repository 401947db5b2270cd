import { randomUUID } from "node:crypto";
import {
  type AgentDeployment,
  type AgentDeploymentSpec,
  type AgentRevision,
  revisionSecretName,
} from "@agentplane/crds";
import { retryOnConflict } from "../kube/errors.ts";
import { buildAgentRevision } from "../revisions/mapping.ts";
import type { RevisionStore } from "../revisions/store.ts";
import { beingDeleted, deploymentNotFound } from "./errors.ts";
import {
  ANNOTATION_UPDATED_AT,
  patchedSpec,
  type RevisionChange,
  secretsChecksum,
  withApiKeysSecret,
} from "./mapping.ts";
import type { Secret } from "./schemas.ts";
import type { AgentServerAuth } from "./service.ts";
import type { DeploymentStore } from "./store.ts";
import { checkTemplate } from "./template-checks.ts";

export interface Revised {
  deployment: AgentDeployment;
  secrets: Secret[];
  revision: AgentRevision | undefined;
}

/** A revision and its Secret, written before the deployment is pointed at them. */
interface PreparedRevision {
  revision: AgentRevision;
  secrets: Secret[];
}

/**
 * The write path of a change to an existing deployment (PATCH, a new revision, a redeploy), for
 * `DeploymentService`: what is written in which order, and what is removed when a step fails.
 */
export class Reviser {
  private readonly deployments: DeploymentStore;
  private readonly revisions: RevisionStore;
  private readonly auth: AgentServerAuth;
  /** Called when the deployment's agent server is left with no API key (it warns once per deployment). */
  private readonly warnOpen: (tenantId: string, id: string) => void;

  constructor(
    deployments: DeploymentStore,
    revisions: RevisionStore,
    auth: AgentServerAuth,
    warnOpen: (tenantId: string, id: string) => void,
  ) {
    this.deployments = deployments;
    this.revisions = revisions;
    this.auth = auth;
    this.warnOpen = warnOpen;
  }

  /**
   * Applies `change` to the deployment (re-reading and re-applying on resourceVersion conflicts). For
   * a new revision, the AgentRevision and the Secret with its `secrets` are written first and the
   * deployment is pointed at them last, so that a failure leaves the deployment on its running
   * revision and removes what was written. The API-key Secret is rewritten from today's grants, so
   * grant changes reach the agent server with this revision.
   */
  async revise(
    tenantId: string,
    current: AgentDeployment,
    change: RevisionChange,
    options: { customUrl?: string; newRevision: boolean },
  ): Promise<Revised> {
    const id = current.metadata.name ?? "";
    if (current.metadata.deletionTimestamp) throw beingDeleted(id);
    const apiKeyHashes = this.auth.apiKeyHashes(tenantId);
    const hasApiKeys = apiKeyHashes.length > 0;
    const now = new Date().toISOString();
    let base: AgentDeployment | undefined = current;
    let prepared: PreparedRevision | undefined;
    let apiKeysWritten = false;
    const discardPrepared = async () => {
      const stale = prepared;
      prepared = undefined;
      if (stale) await this.discardRevision(current, stale.revision);
    };
    try {
      const deployment = await retryOnConflict(async () => {
        base ??= await this.deployments.findCurrent(tenantId, id);
        if (!base) throw deploymentNotFound(id);
        if (base.metadata.deletionTimestamp) throw beingDeleted(id);
        // A retry starts from a deployment someone else changed: what was prepared for the old one goes.
        await discardPrepared();
        let spec = patchedSpec(base.spec, change, options.customUrl, undefined);
        const secrets = change.secrets ?? (await this.deployments.readSecrets(base));
        await checkTemplate(this.deployments, tenantId, base.metadata.namespace ?? "", spec.template, secrets);
        if (hasApiKeys && !apiKeysWritten) {
          await this.deployments.writeApiKeysSecret(base, apiKeyHashes);
          apiKeysWritten = true;
        }
        if (options.newRevision) {
          prepared = await this.prepareRevision(base, spec, secrets, now);
          spec = {
            ...spec,
            revisionName: prepared.revision.metadata.name ?? "",
            template: prepared.revision.spec.template,
          };
        }
        const next: AgentDeployment = {
          ...base,
          metadata: { ...base.metadata, annotations: { ...base.metadata.annotations, [ANNOTATION_UPDATED_AT]: now } },
          spec: withApiKeysSecret(spec, id, hasApiKeys),
        };
        base = undefined;
        return this.deployments.replace(next);
      });
      if (!hasApiKeys) {
        // Keys of grants that were revoked should not linger in the cluster once nothing mounts them.
        await this.deployments.deleteApiKeysSecret(deployment);
        this.warnOpen(tenantId, id);
      }
      if (!prepared)
        return { deployment, secrets: await this.deployments.readSecrets(deployment), revision: undefined };
      const revision = await this.revisions.setInitialStatus(prepared.revision, "AWAITING_DEPLOY");
      return { deployment, secrets: prepared.secrets, revision };
    } catch (error) {
      await discardPrepared().catch(() => undefined);
      throw error;
    }
  }

  /** Writes the next revision of `base` (running `spec`) and its Secret; nothing points at them yet. */
  private async prepareRevision(
    base: AgentDeployment,
    spec: AgentDeploymentSpec,
    secrets: Secret[],
    now: string,
  ): Promise<PreparedRevision> {
    const deploymentId = base.metadata.name ?? "";
    const revisionId = randomUUID();
    const template = { ...spec.template, secretName: revisionSecretName(deploymentId, revisionId) };
    const revision = await this.revisions.create(
      buildAgentRevision({
        deployment: { ...base, spec: { ...spec, template } },
        revisionId,
        secretsChecksum: secretsChecksum(secrets),
        now,
      }),
    );
    try {
      await this.deployments.createRevisionSecret(base, revision, secrets);
    } catch (error) {
      await this.discardRevision(base, revision).catch(() => undefined);
      throw error;
    }
    return { revision, secrets };
  }

  /** Removes a revision nothing points at, and its Secret (garbage collection would, but later). */
  private async discardRevision(deployment: AgentDeployment, revision: AgentRevision): Promise<void> {
    const revisionId = revision.metadata.name ?? "";
    await Promise.all([
      this.revisions.delete(revision.metadata.namespace ?? "", revisionId),
      this.deployments.deleteRevisionSecret(deployment, revisionId),
    ]);
  }
}
