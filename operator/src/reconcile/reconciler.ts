import {
  type AgentDeployment,
  type AgentRevision,
  CLEANUP_FINALIZER,
  LABEL_DEPLOYMENT_ID,
  sharedWithWorkspace,
} from "@agentplane/crds";
import type { Logger } from "pino";
import { type DesiredChildren, desiredChildren, intentHash } from "../build/children.ts";
import { agentName, FIELD_MANAGER, nameOf, REVISION_LABEL, SPEC_HASH_ANNOTATION } from "../build/names.ts";
import { describeViolations, type ForeignReference, foreignReferences, policyViolations } from "../build/pod-policy.ts";
import { managesRedis } from "../build/redis.ts";
import type { BuildSettings } from "../build/settings.ts";
import type { ReconcileResult } from "../controller-runtime/work-queue.ts";
import type { Metrics } from "../http/metrics.ts";
import { isConflict, KubeApiError, type KubeClient, type KubeObject } from "../kube/client.ts";
import type { EventRecorder } from "../kube/events.ts";
import { type ResourceType, resourcePath, resources, resourceTypeOf } from "../kube/resources.ts";
import { agentDeploymentStatus } from "../status/deployment.ts";
import {
  activeRevisionOutcome,
  type RevisionOutcome,
  revisionStatusFor,
  supersededOutcome,
} from "../status/revisions.ts";
import {
  type LiveDeployment,
  type PodFailure,
  podFailure,
  type Rollout,
  replicaFailure,
  rolloutStatus,
} from "../status/rollout.ts";
import { type Caches, childCache } from "./caches.ts";
import { keepLiveClaimTemplates } from "./claim-templates.ts";
import { cleanUp } from "./cleanup.ts";
import { autoscaling, managedRedisProblem, redisFailure, redisReady, revisionPods, serviceUrl } from "./observe.ts";

interface Write {
  hash: string;
  /** resourceVersion the cache showed when we wrote (undefined: the object did not exist). */
  basedOn: string | undefined;
  at: number;
}

const CACHE_LAG_MS = 5_000;

/** A child the API server refused as written (its intent hash and the server's message). */
interface Rejection {
  hash: string;
  message: string;
}

/**
 * Answers that refuse the object itself, so sending it again cannot help: 422 Invalid (validation,
 * immutable fields) and 400 (it cannot be decoded). A 403 is left to retry: RBAC can be fixed.
 */
function isRefusal(error: unknown): error is KubeApiError {
  return error instanceof KubeApiError && (error.code === 422 || error.code === 400);
}
/** How long a create-once child seen to exist is trusted to still exist (it has no informer). */
const CREATED_RECHECK_MS = 5 * 60_000;

const REFERENCED_TYPES: Record<ForeignReference["kind"], ResourceType> = {
  Secret: resources.secret,
  ConfigMap: resources.configMap,
  ServiceAccount: resources.serviceAccount,
};

/**
 * The API calls the reconciler makes itself; everything else it reads from the caches. Narrower
 * than KubeClient so a table test can hand it a client that records the writes.
 */
export type ReconcilerKube = Pick<
  KubeClient,
  "get" | "list" | "create" | "apply" | "mergePatch" | "jsonPatch" | "delete"
>;

export interface ReconcilerDeps {
  kube: ReconcilerKube;
  caches: Caches;
  settings: BuildSettings;
  events: Pick<EventRecorder, "record">;
  metrics: Metrics;
  log: Logger;
  now: () => Date;
  /** How often to look again while a rollout is in progress (watch events normally come first). */
  pollMs: number;
}

/**
 * Level-based reconcile of one AgentDeployment: read the caches, build the desired children, apply
 * only what changed, then derive and write the status of the deployment and its revisions.
 */
export class Reconciler {
  private readonly deps: ReconcilerDeps;
  /**
   * Per AgentDeployment key: what we last wrote to each child or status, while the informer cache
   * may not show it yet (same resourceVersion as before the write, for a few seconds). Writing it
   * again from a stale cache would only bump resourceVersions and wake everyone up.
   */
  private readonly written = new Map<string, Map<string, Write>>();
  /**
   * Per AgentDeployment key: children the API server refused, by `Kind/name`. Not sent again until
   * their intent changes (or the live object goes away), so a refusal is reported once, not per reconcile.
   */
  private readonly rejected = new Map<string, Map<string, Rejection>>();

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const [namespace, name] = key.split("/") as [string, string];
    const agd = this.deps.caches.agentDeployments.get(name, namespace);
    if (!agd) {
      this.written.delete(key);
      this.rejected.delete(key);
      return undefined;
    }
    if (agd.metadata.deletionTimestamp) {
      this.written.delete(key);
      this.rejected.delete(key);
      const done = await cleanUp(agd, this.deps);
      return done ? undefined : { requeueAfterMs: 1000 };
    }
    if (!agd.metadata.finalizers?.includes(CLEANUP_FINALIZER)) await this.addFinalizer(agd);

    const revisions = this.deps.caches.agentRevisions
      .list(namespace)
      .filter((r) => r.spec.deploymentId === name || r.metadata.labels?.[LABEL_DEPLOYMENT_ID] === name);
    const active = revisions.find((r) => nameOf(r) === agd.spec.revisionName);
    // The control plane creates the revision right after the deployment; its event will bring us back.
    if (!active) return { requeueAfterMs: this.deps.pollMs };

    // A spec the control plane would have refused (written past it, e.g. with kubectl) is not rendered
    // at all: what runs stays as it was, and the revision fails with the offending fields named.
    const policy = await this.policyRejection(agd, active);
    const applied = policy ? undefined : await this.applyChildren(agd, active);
    const deployment = applied ? applied.deployment : this.deps.caches.deployments.get(agentName(agd), namespace);
    const rejection = policy ?? applied?.refused;
    const servesActive = deployment?.spec?.template?.metadata?.labels?.[REVISION_LABEL] === nameOf(active);
    const rollout: Rollout | undefined = deployment && servesActive ? rolloutStatus(deployment) : undefined;
    const pods = revisionPods(this.deps, agd, nameOf(active));
    const redis = managesRedis(agd) ? await managedRedisProblem(this.deps, agd) : undefined;
    // A Redis that cannot start fails the rollout with its own reason: the agent pods, not ready
    // without it, would otherwise fail it much later as a misleading progress-deadline overrun. So do
    // pods admission refuses (the Deployment's ReplicaFailure condition).
    const failure =
      rejection ?? podFailure(pods) ?? (servesActive ? replicaFailure(deployment) : undefined) ?? redisFailure(redis);
    const readyReplicas = deployment?.status?.readyReplicas ?? 0;
    const outcome = activeRevisionOutcome(active.status?.revisionStatus, rollout, failure);
    const redisUp = !managesRedis(agd) || redisReady(this.deps, agd);
    const scaling = autoscaling(this.deps, agd);
    // The deployment first: whoever sees a revision DEPLOYED (a CI job polling it) then finds the
    // deployment already naming it active, with its URL.
    await this.writeDeploymentStatus(agd, {
      active: outcome,
      rollout,
      failure,
      readyReplicas,
      redisReady: redisUp,
      ...(redis ? { redis } : {}),
      url: serviceUrl(this.deps, agd),
      ...(scaling ? { autoscaling: scaling } : {}),
    });
    await this.writeRevisionStatus(agd, active, outcome, servesActive ? readyReplicas : 0);
    for (const revision of revisions) {
      if (revision === active) continue;
      const superseded = supersededOutcome(revision, active);
      if (superseded) await this.writeRevisionStatus(agd, revision, superseded, 0);
    }
    // A rejected spec changes only when the custom resources do, and their events bring us back.
    if (rejection) return undefined;
    const settled = outcome.revisionStatus !== "DEPLOYING" && redisUp && rollout?.phase === "complete";
    return settled ? undefined : { requeueAfterMs: this.deps.pollMs };
  }

  private async addFinalizer(agd: AgentDeployment): Promise<void> {
    const path = resourcePath(resources.agentDeployment, agd.metadata.namespace, nameOf(agd));
    const finalizers = agd.metadata.finalizers;
    await this.deps.kube.jsonPatch(
      path,
      [
        { op: "test", path: "/metadata/resourceVersion", value: agd.metadata.resourceVersion },
        finalizers
          ? { op: "add", path: "/metadata/finalizers/-", value: CLEANUP_FINALIZER }
          : { op: "add", path: "/metadata/finalizers", value: [CLEANUP_FINALIZER] },
      ],
      FIELD_MANAGER,
    );
  }

  /** The pod policy's verdict, after looking up whether the foreign objects the spec names are shared. */
  private async policyRejection(agd: AgentDeployment, revision: AgentRevision): Promise<PodFailure | undefined> {
    const shared = new Set<string>();
    await Promise.all(
      foreignReferences(agd, revision).map(async (ref) => {
        const path = resourcePath(REFERENCED_TYPES[ref.kind], agd.metadata.namespace, ref.name);
        const obj = await this.deps.kube.get<KubeObject>(path);
        if (obj && sharedWithWorkspace(obj.metadata?.annotations, agd.spec.tenantId))
          shared.add(`${ref.kind}/${ref.name}`);
      }),
    );
    const violations = policyViolations(agd, revision, { isShared: (ref) => shared.has(`${ref.kind}/${ref.name}`) });
    if (violations.length === 0) return undefined;
    return { reason: "SpecRejected", message: describeViolations(violations) };
  }

  /** Creates each create-once child that does not exist yet (never rewriting one that does). */
  private async createMissing(agd: AgentDeployment, children: DesiredChildren["createOnce"]): Promise<void> {
    const { kube, events } = this.deps;
    const namespace = agd.metadata.namespace as string;
    const memo = this.memo(agd);
    await Promise.all(
      children.map(async (child) => {
        const key = `${child.kind}/${child.name}`;
        const seen = memo.get(key);
        if (seen?.hash === "exists" && Date.now() - seen.at < CREATED_RECHECK_MS) return;
        const type = resourceTypeOf(child);
        if (!(await kube.get(resourcePath(type, namespace, child.name)))) {
          try {
            await kube.create(resourcePath(type, namespace), child.build());
            events.record(agd, "Normal", "Created", "Apply", `Created ${child.kind} ${child.name}`);
          } catch (error) {
            if (!isConflict(error)) throw error; // AlreadyExists: created meanwhile, keep it
          }
        }
        memo.set(key, { hash: "exists", basedOn: undefined, at: Date.now() });
      }),
    );
  }

  /**
   * Applies every child whose intent changed (in parallel: they are independent objects) and deletes
   * those that must not exist; returns the agent Deployment as the API server last showed it.
   */
  private async applyChildren(
    agd: AgentDeployment,
    active: AgentRevision,
  ): Promise<{ deployment: LiveDeployment | undefined; refused: PodFailure | undefined }> {
    const { kube, caches, metrics, events } = this.deps;
    const namespace = agd.metadata.namespace as string;
    const desired = desiredChildren(agd, active, this.deps.settings);
    await this.createMissing(agd, desired.createOnce);
    const applied = this.memo(agd);
    const deploymentKey = `${namespace}/${nameOf(agd)}`;
    const rejected = this.rejected.get(deploymentKey) ?? new Map<string, Rejection>();
    this.rejected.set(deploymentKey, rejected);
    let deployment = caches.deployments.get(agentName(agd), namespace);
    const apply = async (child: KubeObject) => {
      const childName = child.metadata?.name as string;
      const key = `${child.kind}/${childName}`;
      const hash = child.metadata?.annotations?.[SPEC_HASH_ANNOTATION] as string;
      const live = childCache(caches, child.kind).get(childName, namespace);
      const liveHash = live?.metadata?.annotations?.[SPEC_HASH_ANNOTATION];
      if (rejected.get(key)?.hash === hash) return;
      rejected.delete(key);
      if (liveHash === hash || this.stillPending(applied.get(key), hash, live)) return;
      const { body, kept } =
        child.kind === "StatefulSet" ? keepLiveClaimTemplates(child, live) : { body: child, kept: [] };
      let result: KubeObject;
      try {
        result = await kube.apply<KubeObject>(
          resourcePath(resourceTypeOf(child), namespace, childName),
          body,
          FIELD_MANAGER,
        );
      } catch (error) {
        if (!isRefusal(error)) throw error;
        // Kubernetes refused the object as rendered: the revision fails with the server's words
        // instead of retrying the same write forever.
        const message = `Kubernetes refused ${child.kind} ${childName}: ${error.message}`;
        rejected.set(key, { hash, message });
        this.deps.log.warn({ kind: child.kind, name: childName, err: error }, "the API server refused a child");
        events.record(agd, "Warning", "ObjectRejected", "Apply", message);
        return;
      }
      applied.set(key, { hash, basedOn: live?.metadata?.resourceVersion, at: Date.now() });
      metrics.applies.inc({ kind: child.kind });
      if (child.kind === "Deployment") deployment = result;
      const verb = live ? "Updated" : "Created";
      events.record(agd, "Normal", verb, "Apply", `${verb} ${child.kind} ${childName}`);
      if (kept.length > 0) {
        const note = `${child.kind} ${childName} keeps its volume claim templates, which Kubernetes never changes (${kept.join("; ")}); see "Changing the Redis storage" in the operator docs`;
        events.record(agd, "Warning", "StorageUnchanged", "Apply", note);
      }
    };
    const remove = async (gone: DesiredChildren["absent"][number]) => {
      const live = await this.liveChild(agd, gone);
      if (!live?.metadata?.ownerReferences?.some((o) => o.uid === agd.metadata.uid)) return;
      await kube.delete(resourcePath(resourceTypeOf(gone), namespace, gone.name));
      applied.delete(`${gone.kind}/${gone.name}`);
      events.record(agd, "Normal", "Deleted", "Delete", `Deleted ${gone.kind} ${gone.name}`);
    };
    await Promise.all([...desired.apply.map(apply), ...desired.absent.map(remove)]);
    const wanted = new Set(desired.apply.map((child) => `${child.kind}/${child.metadata?.name}`));
    for (const key of rejected.keys()) if (!wanted.has(key)) rejected.delete(key);
    const [first] = rejected.values();
    return {
      deployment,
      refused: first && { reason: "ObjectRejected", message: [...rejected.values()].map((r) => r.message).join("; ") },
    };
  }

  /**
   * A child as last seen: from its informer cache, or (Secrets, which the operator does not watch)
   * from the API server, at most once per recheck period while it stays absent.
   */
  private async liveChild(agd: AgentDeployment, child: DesiredChildren["absent"][number]) {
    const namespace = agd.metadata.namespace as string;
    if (child.kind !== "Secret") return childCache(this.deps.caches, child.kind).get(child.name, namespace);
    const memo = this.memo(agd);
    const key = `${child.kind}/${child.name}`;
    const seen = memo.get(key);
    if (seen?.hash === "absent" && Date.now() - seen.at < CREATED_RECHECK_MS) return undefined;
    const live = await this.deps.kube.get<KubeObject>(resourcePath(resourceTypeOf(child), namespace, child.name));
    memo.set(key, { hash: live ? "exists" : "absent", basedOn: undefined, at: Date.now() });
    return live;
  }

  /** The informer saw `kind/name` deleted: whatever we wrote to it is gone. */
  forgetWrite(deploymentKey: string, kind: string, name: string): void {
    this.written.get(deploymentKey)?.delete(`${kind}/${name}`);
    this.rejected.get(deploymentKey)?.delete(`${kind}/${name}`);
  }

  /** True when we already wrote `hash` and the cache has not moved since (it is just behind). */
  private stillPending(write: Write | undefined, hash: string, cached: KubeObject | undefined): boolean {
    return (
      write !== undefined &&
      write.hash === hash &&
      write.basedOn === cached?.metadata?.resourceVersion &&
      Date.now() - write.at < CACHE_LAG_MS
    );
  }

  private memo(agd: AgentDeployment): Map<string, Write> {
    const key = `${agd.metadata.namespace}/${nameOf(agd)}`;
    let memo = this.written.get(key);
    if (!memo) {
      memo = new Map();
      this.written.set(key, memo);
    }
    return memo;
  }

  /** Writes `status` to the status subresource unless the cache or our last write already shows it. */
  private async writeStatus(
    agd: AgentDeployment,
    obj: KubeObject & { status?: unknown },
    status: unknown,
  ): Promise<boolean> {
    const hash = intentHash(status);
    const memoKey = `${obj.kind}/${obj.metadata?.name}/status`;
    const memo = this.memo(agd);
    if ((obj.status && intentHash(obj.status) === hash) || this.stillPending(memo.get(memoKey), hash, obj))
      return false;
    await this.deps.kube.mergePatch(
      `${resourcePath(resourceTypeOf(obj), obj.metadata?.namespace, obj.metadata?.name)}/status`,
      { status },
      FIELD_MANAGER,
    );
    memo.set(memoKey, { hash, basedOn: obj.metadata?.resourceVersion, at: Date.now() });
    this.deps.metrics.statusWrites.inc({ kind: obj.kind });
    return true;
  }

  private async writeRevisionStatus(
    agd: AgentDeployment,
    revision: AgentRevision,
    outcome: RevisionOutcome,
    readyReplicas: number,
  ): Promise<void> {
    const status = revisionStatusFor(revision, outcome, readyReplicas, this.deps.now());
    const wrote = await this.writeStatus(agd, revision, status);
    if (wrote && revision.status?.revisionStatus !== outcome.revisionStatus) {
      const warning = outcome.revisionStatus === "DEPLOY_FAILED";
      const note = `Revision ${nameOf(revision)} is ${outcome.revisionStatus}${outcome.message ? `: ${outcome.message}` : ""}`;
      this.deps.log.info({ revision: nameOf(revision), status: outcome.revisionStatus }, "revision status changed");
      this.deps.events.record(agd, warning ? "Warning" : "Normal", outcome.reason, "Rollout", note);
    }
  }

  private async writeDeploymentStatus(
    agd: AgentDeployment,
    seen: Parameters<typeof agentDeploymentStatus>[1],
  ): Promise<void> {
    await this.writeStatus(agd, agd, agentDeploymentStatus(agd, seen, this.deps.now()));
  }
}
