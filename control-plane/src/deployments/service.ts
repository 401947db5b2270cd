import { randomUUID } from "node:crypto";
import { badRequest, conflict, HttpError, type Logger, notFound } from "@agentplane/common";
import type { AgentDeployment, AgentRevision } from "@agentplane/crds";
import { isNotFound, retryOnConflict } from "../kube/errors.ts";
import { buildAgentRevision, revisionStatus, toRevisionResponse } from "../revisions/mapping.ts";
import type { Revision } from "../revisions/schemas.ts";
import type { RevisionStore } from "../revisions/store.ts";
import {
  ANNOTATION_UPDATED_AT,
  buildAgentDeployment,
  createsRevision,
  deploymentStatus,
  immutableFieldChange,
  newestFirst,
  patchedSpec,
  type RevisionChange,
  revisionChangeOf,
  secretsChecksum,
  toDeploymentResponse,
  withApiKeysSecret,
} from "./mapping.ts";
import type {
  Deployment,
  DeploymentCreateRequest,
  DeploymentListQuery,
  DeploymentPatchRequest,
  RevisionCreateRequest,
  Secret,
} from "./schemas.ts";
import type { DeploymentStore } from "./store.ts";

const deploymentNotFound = (id: string) => notFound(`Deployment ID ${id} not found.`);
const nameTaken = (name: string) => conflict(`A deployment named '${name}' already exists.`);
const beingDeleted = (id: string) => badRequest(`Deployment ID ${id} is being deleted.`);

interface Revised {
  deployment: AgentDeployment;
  secrets: Secret[];
  revision: AgentRevision | undefined;
}

export interface AgentServerAuth {
  /** The API-key hashes a tenant's agent servers accept: those of the grants that cover the tenant. */
  apiKeyHashes(tenantId: string): string[];
  logger: Logger;
}

/** The deployment and revision rules of the API, over the stores (the only place that talks to Kubernetes). */
export class DeploymentService {
  private readonly deployments: DeploymentStore;
  private readonly revisions: RevisionStore;
  private readonly auth: AgentServerAuth;
  /** Deployments already warned about running an open agent server (one warning each per process). */
  private readonly warnedOpen = new Set<string>();

  constructor(deployments: DeploymentStore, revisions: RevisionStore, auth: AgentServerAuth) {
    this.deployments = deployments;
    this.revisions = revisions;
    this.auth = auth;
  }

  private warnOpen(tenantId: string, id: string): void {
    if (this.warnedOpen.has(id)) return;
    this.warnedOpen.add(id);
    this.auth.logger.warn(
      { deploymentId: id, tenantId },
      "no API-key grant covers this deployment's workspace: its agent server will accept unauthenticated requests",
    );
  }

  /** The deployment (404 if absent or another tenant's); `current` reads past the cache, before a write. */
  async require(tenantId: string, id: string, current = false): Promise<AgentDeployment> {
    const deployment = current
      ? await this.deployments.findCurrent(tenantId, id)
      : await this.deployments.find(tenantId, id);
    if (!deployment) throw deploymentNotFound(id);
    return deployment;
  }

  async get(tenantId: string, id: string): Promise<Deployment> {
    const deployment = await this.require(tenantId, id);
    return toDeploymentResponse(deployment, await this.deployments.readSecrets(deployment));
  }

  async list(tenantId: string, query: DeploymentListQuery): Promise<{ resources: Deployment[]; offset: number }> {
    const needle = query.name_contains?.toLowerCase();
    const matching = (await this.deployments.listForTenant(tenantId))
      .filter(
        (deployment) =>
          (needle == null || deployment.spec.displayName.toLowerCase().includes(needle)) &&
          (query.name == null || deployment.spec.displayName === query.name) &&
          (query.status == null || deploymentStatus(deployment) === query.status),
      )
      .sort(newestFirst);
    const page = matching.slice(query.offset, query.offset + query.limit);
    const resources = await Promise.all(
      page.map(async (deployment) => toDeploymentResponse(deployment, await this.deployments.readSecrets(deployment))),
    );
    return { resources, offset: query.offset + resources.length };
  }

  async create(tenantId: string, request: DeploymentCreateRequest): Promise<Deployment> {
    if (request.source !== "external_docker") {
      throw badRequest(
        `Source '${request.source}' is not supported: this control plane deploys 'external_docker' images.`,
      );
    }
    const image = request.source_revision_config.image_uri;
    if (!image) {
      throw new HttpError(422, [
        { loc: ["body", "source_revision_config", "image_uri"], msg: "Field required", type: "missing" },
      ]);
    }
    const namespace =
      request.source_config.listener_config?.k8s_namespace ?? this.deployments.namespaces[0] ?? "default";
    if (!this.deployments.namespaces.includes(namespace)) {
      throw badRequest(`Namespace '${namespace}' is not managed by this control plane.`);
    }
    if ((await this.deployments.findByName(tenantId, request.name)).length > 0) throw nameTaken(request.name);

    const id = randomUUID();
    const revisionId = randomUUID();
    const now = new Date().toISOString();
    const apiKeyHashes = this.auth.apiKeyHashes(tenantId);
    const desired = buildAgentDeployment({
      id,
      tenantId,
      namespace,
      revisionId,
      now,
      hasApiKeys: apiKeyHashes.length > 0,
      request: { ...request, source_revision_config: { image_uri: image } },
    });
    const created = await this.deployments.create(desired).catch((error: unknown) => {
      throw isNotFound(error) ? badRequest(`Namespace '${namespace}' does not exist.`) : error;
    });
    try {
      const revision = buildAgentRevision({
        deployment: created,
        revisionId,
        secretsChecksum: secretsChecksum(request.secrets),
        now,
      });
      const [, , , sameName] = await Promise.all([
        this.deployments.createSecret(created, request.secrets),
        apiKeyHashes.length > 0 ? this.deployments.writeApiKeysSecret(created, apiKeyHashes) : undefined,
        this.revisions.create(revision).then((stored) => this.revisions.setInitialStatus(stored, "AWAITING_DEPLOY")),
        this.deployments.findByName(tenantId, request.name),
      ]);
      // Two concurrent creates of one name both pass the first check; the older one wins.
      const [winner] = sameName.sort(newestFirst).reverse();
      if (winner && winner.metadata.name !== id) throw nameTaken(request.name);
    } catch (error) {
      await this.discard(created);
      throw error;
    }
    if (apiKeyHashes.length === 0) this.warnOpen(tenantId, id);
    return toDeploymentResponse(created, request.secrets);
  }

  /** Best-effort removal of a half-created deployment, so a failed create leaves nothing behind. */
  private async discard(deployment: AgentDeployment): Promise<void> {
    await Promise.allSettled([
      this.deployments.delete(deployment),
      this.deployments.deleteSecrets(deployment),
      this.revisions.delete(deployment.metadata.namespace ?? "", deployment.spec.revisionName),
    ]);
  }

  async patch(tenantId: string, id: string, body: DeploymentPatchRequest): Promise<Deployment> {
    const current = await this.require(tenantId, id, true);
    const violation = immutableFieldChange(current, body);
    if (violation) throw badRequest(violation);
    const change = revisionChangeOf(body);
    const customUrl = body.source_config?.custom_url ?? undefined;
    if (!createsRevision(change) && customUrl === undefined) {
      return toDeploymentResponse(current, await this.deployments.readSecrets(current));
    }
    const { deployment, secrets } = await this.revise(tenantId, current, change, {
      customUrl,
      newRevision: createsRevision(change),
    });
    return toDeploymentResponse(deployment, secrets);
  }

  async createRevision(tenantId: string, id: string, body: RevisionCreateRequest): Promise<Revision> {
    const current = await this.require(tenantId, id, true);
    const { revision } = await this.revise(tenantId, current, revisionChangeOf(body), { newRevision: true });
    if (!revision) throw new Error("a new revision was requested but none was created");
    return toRevisionResponse(revision);
  }

  /** A new revision running what `revisionId` ran (image, resources, secret references) with today's secrets. */
  async redeploy(tenantId: string, id: string, revisionId: string): Promise<Deployment> {
    const current = await this.require(tenantId, id, true);
    const source = await this.revisions.find(current, revisionId);
    if (!source) throw notFound(`Revision ID ${revisionId} not found.`);
    const { template } = source.spec;
    const change: RevisionChange = {
      image: template.image,
      resources: template.resources ?? {},
      secretReferences: template.secretReferences ?? [],
    };
    const { deployment, secrets } = await this.revise(tenantId, current, change, { newRevision: true });
    return toDeploymentResponse(deployment, secrets);
  }

  /**
   * Applies `change` to the deployment (re-reading and re-applying on resourceVersion conflicts) and,
   * for a new revision, snapshots exactly the spec that was written into an AgentRevision. The API-key
   * Secret is rewritten from today's grants, so grant changes reach the agent server with this revision.
   */
  private async revise(
    tenantId: string,
    current: AgentDeployment,
    change: RevisionChange,
    options: { customUrl?: string; newRevision: boolean },
  ): Promise<Revised> {
    const id = current.metadata.name ?? "";
    if (current.metadata.deletionTimestamp) throw beingDeleted(id);
    const revisionId = options.newRevision ? randomUUID() : undefined;
    const previousSecrets = await this.deployments.readSecrets(current);
    const secrets = change.secrets ?? previousSecrets;
    if (change.secrets) await this.deployments.replaceSecret(current, change.secrets);
    const apiKeyHashes = this.auth.apiKeyHashes(tenantId);
    const hasApiKeys = apiKeyHashes.length > 0;
    if (hasApiKeys) await this.deployments.writeApiKeysSecret(current, apiKeyHashes);
    const now = new Date().toISOString();
    let base: AgentDeployment | undefined = current;
    const deployment = await retryOnConflict(async () => {
      base ??= await this.deployments.findCurrent(tenantId, id);
      if (!base) throw deploymentNotFound(id);
      if (base.metadata.deletionTimestamp) throw beingDeleted(id);
      const next: AgentDeployment = {
        ...base,
        metadata: { ...base.metadata, annotations: { ...base.metadata.annotations, [ANNOTATION_UPDATED_AT]: now } },
        spec: withApiKeysSecret(patchedSpec(base.spec, change, options.customUrl, revisionId), id, hasApiKeys),
      };
      base = undefined;
      return this.deployments.replace(next);
    }).catch(async (error: unknown) => {
      // The PATCH failed as a whole: the running revision keeps the secrets it started with.
      if (change.secrets) await this.deployments.replaceSecret(current, previousSecrets).catch(() => undefined);
      throw error;
    });
    if (!hasApiKeys) {
      // Keys of grants that were revoked should not linger in the cluster once nothing mounts them.
      await this.deployments.deleteApiKeysSecret(deployment);
      this.warnOpen(tenantId, id);
    }
    if (!revisionId) return { deployment, secrets, revision: undefined };
    const created = await this.revisions.create(
      buildAgentRevision({ deployment, revisionId, secretsChecksum: secretsChecksum(secrets), now }),
    );
    const revision = await this.revisions.setInitialStatus(created, "AWAITING_DEPLOY");
    return { deployment, secrets, revision };
  }

  /** First call: deletion starts (AWAITING_DELETE). `force` afterwards skips the operator's cleanup. */
  async delete(tenantId: string, id: string, force: boolean): Promise<void> {
    const current = await this.require(tenantId, id, true);
    if (!force) {
      await this.deployments.delete(current);
      return;
    }
    if (!current.metadata.deletionTimestamp) {
      throw badRequest("force=true is only allowed for a deployment that is already awaiting deletion.");
    }
    let base: AgentDeployment | undefined = current;
    await retryOnConflict(async () => {
      base ??= await this.deployments.findCurrent(tenantId, id);
      if (!base) return;
      const target = base;
      base = undefined;
      await this.deployments.dropFinalizers(target);
    });
  }

  async listRevisions(tenantId: string, id: string, statuses: string[] | undefined): Promise<AgentRevision[]> {
    const deployment = await this.require(tenantId, id);
    return (await this.revisions.list(deployment))
      .filter((revision) => !statuses || statuses.includes(revisionStatus(revision)))
      .sort(newestFirst);
  }

  async getRevision(tenantId: string, id: string, revisionId: string): Promise<Revision> {
    const deployment = await this.require(tenantId, id);
    const revision = await this.revisions.find(deployment, revisionId);
    if (!revision) throw notFound(`Revision ID ${revisionId} not found.`);
    return toRevisionResponse(revision);
  }
}
