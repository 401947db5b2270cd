import type { AgentDeployment, AgentRevision } from "@agentplane/crds";
import { type Logger, pino } from "pino";
import { INSTANCE_LABEL, MANAGED_BY, MANAGED_BY_LABEL } from "./build/names.ts";
import type { OperatorSettings } from "./config.ts";
import { type Informer, startInformer } from "./controller-runtime/informer.ts";
import { LeaderElector } from "./controller-runtime/leader.ts";
import { WorkQueue } from "./controller-runtime/work-queue.ts";
import { createMetrics } from "./http/metrics.ts";
import { startHealthServer } from "./http/server.ts";
import { KubeClient, type KubeObject } from "./kube/client.ts";
import type { KubeConnection } from "./kube/config.ts";
import { EventRecorder } from "./kube/events.ts";
import { type ResourceType, resourcePath, resources } from "./kube/resources.ts";
import type { Caches } from "./reconcile/caches.ts";
import { Reconciler } from "./reconcile/reconciler.ts";
import { trimDeployment, trimPod, trimStatefulSet, trimToStatus } from "./reconcile/trim.ts";

export interface RunningOperator {
  /** Port of `/healthz`, `/readyz` and `/metrics`. */
  healthPort: number;
  isLeader(): boolean;
  /** Resolves once every informer has listed at least once. */
  synced: Promise<void>;
  /**
   * Resolves when this replica loses the lease it held. It has stopped reconciling by then and never
   * campaigns again: like controller-runtime, the process should exit and start afresh.
   */
  lostLeadership: Promise<void>;
  /** Resolves when no reconcile is queued or running (tests, benchmarks). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

const BACKOFF = { baseMs: 50, maxMs: 60_000 };
const INFORMER_BACKOFF = { baseMs: 200, maxMs: 30_000 };

/**
 * Starts informers on every replica (warm caches) and, on the replica holding the Lease, the
 * workers that reconcile AgentDeployments.
 */
export async function startOperator(
  connection: KubeConnection,
  settings: OperatorSettings,
  log: Logger = pino({ name: "agentplane-operator" }),
): Promise<RunningOperator> {
  const kube = new KubeClient(connection);
  const metrics = createMetrics();
  const events = new EventRecorder(kube, "agentplane.dev/operator", settings.identity, log);
  const informers: Informer<unknown>[] = [];
  const ns = settings.watchNamespace;
  let queue: WorkQueue | undefined;
  const enqueue = (namespace: string | undefined, name: string | undefined) => {
    if (namespace && name) queue?.add(`${namespace}/${name}`);
  };
  const inform = <T extends KubeObject>(
    type: ResourceType,
    onEvent: (obj: T, deleted: boolean) => void,
    labelSelector?: string,
    transform?: (obj: T) => T,
  ) => {
    const informer = startInformer<T>({
      kube,
      path: resourcePath(type, ns),
      labelSelector,
      onEvent,
      transform,
      log,
      backoff: INFORMER_BACKOFF,
    });
    informers.push(informer as Informer<unknown>);
    return informer.cache;
  };
  const ours = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
  // Informer callbacks first run after their initial list has been awaited, when `reconciler` exists.
  const ownerOf = (kind: string) => (obj: KubeObject, deleted: boolean) => {
    const owner = obj.metadata?.labels?.[INSTANCE_LABEL];
    // A child deleted by hand may still be remembered as "just written": forget it so it is re-applied.
    if (deleted && owner)
      reconciler.forgetWrite(`${obj.metadata?.namespace}/${owner}`, kind, obj.metadata?.name as string);
    enqueue(obj.metadata?.namespace, owner);
  };
  const caches: Caches = {
    agentDeployments: inform<AgentDeployment>(resources.agentDeployment, (agd) =>
      enqueue(agd.metadata.namespace, agd.metadata.name),
    ),
    agentRevisions: inform<AgentRevision>(resources.agentRevision, (rev) =>
      enqueue(rev.metadata.namespace, rev.spec.deploymentId),
    ),
    deployments: inform(resources.deployment, ownerOf("Deployment"), ours, trimDeployment),
    services: inform(resources.service, ownerOf("Service"), ours, trimToStatus),
    statefulSets: inform(resources.statefulSet, ownerOf("StatefulSet"), ours, trimStatefulSet),
    autoscalers: inform(resources.hpa, ownerOf("HorizontalPodAutoscaler"), ours, trimToStatus),
    networkPolicies: inform(resources.networkPolicy, ownerOf("NetworkPolicy"), ours, trimToStatus),
    pods: inform(resources.pod, ownerOf("Pod"), ours, trimPod),
  };
  const synced = Promise.all(informers.map((i) => i.synced)).then(() => undefined);
  let isSynced = false;
  void synced.then(() => {
    isSynced = true;
  });

  const reconciler = new Reconciler({
    kube,
    caches,
    settings: settings.build,
    events,
    metrics,
    log,
    now: () => new Date(),
    pollMs: settings.pollMs,
  });
  const workQueue = new WorkQueue(
    async (key) => {
      const stop = metrics.reconcileSeconds.startTimer();
      try {
        const result = await reconciler.reconcile(key);
        metrics.reconciles.inc({ result: result?.requeueAfterMs ? "requeue" : "done" });
        return result;
      } catch (error) {
        metrics.reconciles.inc({ result: "error" });
        throw error;
      } finally {
        stop();
        metrics.queueDepth.set(workQueue.depth);
      }
    },
    { workers: settings.workers, baseDelayMs: BACKOFF.baseMs, maxDelayMs: BACKOFF.maxMs },
    (key, error, retryInMs) => log.warn({ key, err: error, retryInMs }, "reconcile failed; retrying"),
  );
  const enqueueAll = () => {
    for (const agd of caches.agentDeployments.list()) enqueue(agd.metadata.namespace, agd.metadata.name);
  };
  let leading = false;
  let closed = false;
  let reportLoss: () => void = () => {};
  const lostLeadership = new Promise<void>((resolve) => {
    reportLoss = resolve;
  });
  const lead = async () => {
    leading = true;
    metrics.leader.set(1);
    await synced;
    // The lease may have been lost (or the operator closed) while the caches filled.
    if (!leading || closed) return;
    queue = workQueue;
    enqueueAll();
    workQueue.start();
  };
  const follow = () => {
    leading = false;
    metrics.leader.set(0);
    queue = undefined;
    void workQueue.stop();
    if (closed) return;
    // Another replica may hold the lease already: never come back to work with state from before.
    void elector?.stop();
    log.error({ identity: settings.identity }, "lost the leader lease; reconciling stopped");
    reportLoss();
  };

  const elector = settings.leaderElection
    ? new LeaderElector({
        kube,
        namespace: settings.leaseNamespace,
        leaseName: settings.leaseName,
        identity: settings.identity,
        leaseDurationMs: settings.lease.durationMs,
        renewDeadlineMs: settings.lease.renewDeadlineMs,
        retryPeriodMs: settings.lease.retryPeriodMs,
        log,
        onStartedLeading: () => void lead(),
        onStoppedLeading: follow,
      })
    : undefined;
  if (elector) elector.start();
  else void lead();
  const resync = setInterval(() => enqueueAll(), settings.resyncMs);
  resync.unref();

  const health = await startHealthServer(
    settings.healthPort,
    settings.healthHost,
    { alive: () => (elector?.msSinceRenewal ?? 0) < 2 * settings.lease.durationMs, ready: () => isSynced },
    metrics,
  );
  log.info({ identity: settings.identity, healthPort: health.port, namespace: ns ?? "(all)" }, "operator started");
  return {
    healthPort: health.port,
    isLeader: () => (elector ? elector.isLeader : true),
    synced,
    lostLeadership,
    idle: () => workQueue.idle(),
    close: async () => {
      closed = true;
      clearInterval(resync);
      await elector?.stop();
      await workQueue.stop();
      await Promise.all(informers.map((i) => i.stop()));
      await health.close();
    },
  };
}
