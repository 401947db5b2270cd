import { randomUUID } from "node:crypto";
import { badRequest, HttpError, type Logger, notFound } from "@agentplane/common";
import type { AgentDeployment, AgentRevision } from "@agentplane/crds";
import { isNotFound, retryOnConflict } from "../kube/errors.ts";
import type { ListenerService } from "../listeners/service.ts";
import { buildAgentRevision, revisionStatus, toRevisionResponse } from "../revisions/mapping.ts";
import type { Revision } from "../revisions/schemas.ts";
import type { RevisionStore } from "../revisions/store.ts";
import { bulkDeleteResult } from "./bulk-delete.ts";
import { deploymentNotFound, nameTaken } from "./errors.ts";
import {
  buildAgentDeployment,
  createsRevision,
  deploymentStatus,
  immutableFieldChange,
  newestFirst,
  type RevisionChange,
  revisionChangeOf,
  secretsChecksum,
  toDeploymentResponse,
} from "./mapping.ts";
import { Reviser } from "./revise.ts";
import type {
  BulkDeleteResponse,
  Deployment,
  DeploymentCreateRequest,
  DeploymentListQuery,
  DeploymentPatchRequest,
  RevisionCreateRequest,
} from "./schemas.ts";
import type { DeploymentStore } from "./store.ts";
import { checkReferences } from "./template-checks.ts";

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
  private readonly listeners: ListenerService;
  /** Writes changes to existing deployments (PATCH, new revisions, redeploys). */
  private readonly reviser: Reviser;
  /** Deployments already warned about running an open agent server (one warning each per process). */
  private readonly warnedOpen = new Set<string>();

  constructor(
    deployments: DeploymentStore,
    revisions: RevisionStore,
    listeners: ListenerService,
    auth: AgentServerAuth,
  ) {
    this.deployments = deployments;
    this.revisions = revisions;
    this.listeners = listeners;
    this.auth = auth;
    this.reviser = new Reviser(deployments, revisions, auth, (tenantId, id) => this.warnOpen(tenantId, id));
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
    // Filters on what no deployment of this control plane has: a Cloud deployment type, a
    // LangSmith-built image version, tags, a remote listener (the operator next to the control plane
    // reconciles every deployment). Such a filter matches nothing rather than being ignored.
    if (
      query.deployment_type != null ||
      query.image_version != null ||
      (query.tag_value_ids?.length ?? 0) > 0 ||
      query.remote_reconciled === true
    ) {
      return { resources: [], offset: query.offset };
    }
    const needle = query.name_contains?.toLowerCase();
    const ids = query.deployment_ids?.length ? new Set(query.deployment_ids) : undefined;
    const matching = (await this.deployments.listForTenant(tenantId))
      .filter(
        (deployment) =>
          (ids === undefined || ids.has(deployment.metadata.name ?? "")) &&
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
    const listenerId = await this.listeners.forDeployment(tenantId, request.source_config.listener_id);
    const namespace = this.deployments.placement.target(tenantId, request.source_config.listener_config?.k8s_namespace);
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
      request: {
        ...request,
        source_config: { ...request.source_config, listener_id: listenerId },
        source_revision_config: { image_uri: image },
      },
    });
    // Everything that can refuse the request is checked before the first write.
    await checkReferences(this.deployments, tenantId, namespace, desired.spec.template);
    await this.deployments.ensureTenantNamespace(namespace, tenantId);
    // The revision is owned by the deployment, so the deployment comes first (it names the revision
    // from the start; a failure below removes both).
    const created = await this.deployments.create(desired).catch((error: unknown) => {
      throw isNotFound(error) ? badRequest(`Namespace '${namespace}' does not exist.`) : error;
    });
    try {
      const revision = await this.revisions.create(
        buildAgentRevision({ deployment: created, revisionId, secretsChecksum: secretsChecksum(request.secrets), now }),
      );
      const [, , , sameName] = await Promise.all([
        this.deployments.createRevisionSecret(created, revision, request.secrets),
        apiKeyHashes.length > 0 ? this.deployments.writeApiKeysSecret(created, apiKeyHashes) : undefined,
        this.revisions.setInitialStatus(revision, "AWAITING_DEPLOY"),
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
    const { deployment, secrets } = await this.reviser.revise(tenantId, current, change, {
      customUrl,
      newRevision: createsRevision(change),
    });
    return toDeploymentResponse(deployment, secrets);
  }

  async createRevision(tenantId: string, id: string, body: RevisionCreateRequest): Promise<Revision> {
    const current = await this.require(tenantId, id, true);
    const { revision } = await this.reviser.revise(tenantId, current, revisionChangeOf(body), { newRevision: true });
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
    const { deployment, secrets } = await this.reviser.revise(tenantId, current, change, { newRevision: true });
    return toDeploymentResponse(deployment, secrets);
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

  /**
   * Starts the deletion of each deployment (as a single DELETE without `force`). 200 when all
   * started, 207 when some did, 404 when none of the ids is a deployment of the tenant.
   */
  async deleteMany(tenantId: string, ids: string[]): Promise<{ status: number; body: BulkDeleteResponse }> {
    const unique = [...new Set(ids)];
    const outcomes = await Promise.allSettled(unique.map((id) => this.delete(tenantId, id, false)));
    const unexpected = outcomes.find(
      (outcome): outcome is PromiseRejectedResult =>
        outcome.status === "rejected" && !(outcome.reason instanceof HttpError),
    );
    // Deletion is idempotent: after a cluster failure the client repeats the whole call.
    if (unexpected) throw unexpected.reason;
    return bulkDeleteResult(unique, outcomes);
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
