import {
  type AgentDeployment,
  type AgentRevision,
  CLEANUP_FINALIZER,
  LABEL_DEPLOYMENT_ID,
  sharedWithWorkspace,
} from "@agentplane/crds";
import type { Logger } from "pino";
import { agentName, FIELD_MANAGER, nameOf, REVISION_LABEL } from "../build/names.ts";
import { describeViolations, type ForeignReference, foreignReferences, policyViolations } from "../build/pod-policy.ts";
import { managesRedis } from "../build/redis.ts";
import type { BuildSettings } from "../build/settings.ts";
import type { ReconcileResult } from "../controller-runtime/work-queue.ts";
import type { Metrics } from "../http/metrics.ts";
import type { KubeClient, KubeObject } from "../kube/client.ts";
import type { EventRecorder } from "../kube/events.ts";
import { type ResourceType, resourcePath, resources } from "../kube/resources.ts";
import { activeRevisionOutcome, supersededOutcome } from "../status/revisions.ts";
import { type PodFailure, podFailure, type Rollout, replicaFailure, rolloutStatus } from "../status/rollout.ts";
import { applyChildren } from "./apply.ts";
import type { Caches } from "./caches.ts";
import { cleanUp } from "./cleanup.ts";
import { autoscaling, managedRedisProblem, redisFailure, redisReady, revisionPods, serviceUrl } from "./observe.ts";
import { writeDeploymentStatus, writeRevisionStatus } from "./status-writes.ts";
import { WriteMemo } from "./write-memo.ts";

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
  /** What we wrote and what the API server refused, per AgentDeployment. */
  private readonly memo = new WriteMemo();

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const [namespace, name] = key.split("/") as [string, string];
    const agd = this.deps.caches.agentDeployments.get(name, namespace);
    if (!agd) {
      this.memo.forgetDeployment(key);
      return undefined;
    }
    if (agd.metadata.deletionTimestamp) {
      this.memo.forgetDeployment(key);
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
    const applied = policy ? undefined : await applyChildren(this.deps, this.memo, agd, active);
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
    const outcome = activeRevisionOutcome(active.status, rollout, failure);
    const redisUp = !managesRedis(agd) || redisReady(this.deps, agd);
    const scaling = autoscaling(this.deps, agd);
    // The deployment first: whoever sees a revision DEPLOYED (a CI job polling it) then finds the
    // deployment already naming it active, with its URL.
    await writeDeploymentStatus(this.deps, this.memo, agd, {
      active: outcome,
      rollout,
      failure,
      readyReplicas,
      redisReady: redisUp,
      ...(redis ? { redis } : {}),
      url: serviceUrl(this.deps, agd),
      ...(scaling ? { autoscaling: scaling } : {}),
    });
    await writeRevisionStatus(this.deps, this.memo, agd, active, outcome, servesActive ? readyReplicas : 0);
    for (const revision of revisions) {
      if (revision === active) continue;
      const superseded = supersededOutcome(revision, active);
      if (superseded) await writeRevisionStatus(this.deps, this.memo, agd, revision, superseded, 0);
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

  /** The informer saw `kind/name` deleted: whatever we wrote to it is gone. */
  forgetWrite(deploymentKey: string, kind: string, name: string): void {
    this.memo.forgetChild(deploymentKey, kind, name);
  }
}
