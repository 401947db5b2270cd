import {
  type AgentDeployment,
  type AgentRevision,
  CLEANUP_FINALIZER,
  type Condition,
  type RevisionStatus,
} from "@agentplane/crds";
import { describe, expect, it } from "vitest";
import { childLabels } from "../build/names.ts";
import type { KubeObject } from "../kube/client.ts";
import { resources } from "../kube/resources.ts";
import type { LivePod } from "../status/rollout.ts";
import { agentDeployment, agentPod, agentRevision, appliedChildren } from "../testing/fixtures.ts";
import { type RecordedWrite, type RecordingCluster, recordingCluster } from "../testing/recording-cluster.ts";

/**
 * Table test of one reconcile (after Knative Serving's TableTest): the objects the cluster and the
 * informer caches hold before, then every write the reconciler sends, the statuses it writes, the
 * events it records and when it asks to look again; then a second reconcile once the caches caught
 * up. Expected values characterise today's behaviour (read from running it, not from a spec).
 */
interface Case {
  name: string;
  /** What the API server and (trimmed and filtered like the informers) the caches hold; `agents/demo` is reconciled. */
  objects: KubeObject[];
  /** Every write in the order sent: `apply|status|patch|delete Kind name` (see `describeWrite`). */
  writes: string[];
  /** Fields of applied bodies that matter, by `Kind name`. */
  applied?: Record<string, object>;
  /** Written statuses by object name, conditions as `Type=Status Reason: message` (times left out). */
  status?: Record<string, object>;
  /** `Type Reason note`. */
  events?: string[];
  /** `requeueAfterMs` of the result (pollMs is 2000 here). */
  requeue: number | undefined;
  /**
   * Writes of a second reconcile once the caches show the first one's writes; default none (a
   * level-based reconciler that rewrites what is already there wakes every watcher up each time).
   */
  again?: string[];
  /** Further checks on what the API server holds afterwards. */
  after?: (cluster: RecordingCluster) => void;
}

const NAME = "demo";
const KEY = `agents/${NAME}`;
const AGENT = `agent-${NAME}`;
const REDIS = `${AGENT}-redis`;
/** An external Redis URL in a Secret of the deployment's own (`<id>-…`, the pod policy's rule). */
const REDIS_URL_SECRET = `${NAME}-redis-url`;
const POLL = 2000;
const HOST_PATH_REFUSED =
  "AgentRevision spec.template.resources.volumes[0].hostPath: hostPath volumes are not allowed (configMap, secret, emptyDir, projected, downwardAPI)";
const URL = `http://${AGENT}.agents.svc.cluster.local:8000`;

const second = (s: number) => `2026-01-01T00:00:${String(s).padStart(2, "0")}Z`;

function deployment(
  spec: Partial<AgentDeployment["spec"]> = {},
  metadata: Partial<AgentDeployment["metadata"]> = {},
  status?: AgentDeployment["status"],
): AgentDeployment {
  const agd = agentDeployment(
    { revisionName: "r1", ...spec },
    { name: NAME, finalizers: [CLEANUP_FINALIZER], ...metadata },
  );
  return status ? { ...agd, status } : agd;
}

/** Revision `name`, created at second `created`, of the `demo` deployment. */
function revision(
  name: string,
  created: number,
  revisionStatus?: RevisionStatus,
  template: Partial<AgentRevision["spec"]["template"]> = {},
): AgentRevision {
  const rev = agentRevision(
    template,
    { name, creationTimestamp: second(created) },
    revisionStatus ? { revisionStatus } : undefined,
  );
  return { ...rev, spec: { ...rev.spec, deploymentId: NAME } };
}

const rolledOut = { observedGeneration: 1, replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1 };
const stalled = { observedGeneration: 1, replicas: 1, updatedReplicas: 1, readyReplicas: 0, availableReplicas: 0 };
const redisUp = { readyReplicas: 1 };

const crashLooping = {
  phase: "Running",
  containerStatuses: [
    {
      name: "agent-server",
      restartCount: 4,
      state: { waiting: { reason: "CrashLoopBackOff", message: "back-off 40s" } },
      lastState: { terminated: { exitCode: 3 } },
    },
  ],
};
const pullFailing = {
  phase: "Pending",
  containerStatuses: [
    { name: "agent-server", state: { waiting: { reason: "ErrImagePull", message: "manifest unknown" } } },
  ],
};
const unschedulable = {
  phase: "Pending",
  conditions: [
    { type: "PodScheduled", status: "False", reason: "Unschedulable", message: "0/3 nodes: Insufficient cpu" },
  ],
};

/** The Redis StatefulSet as an operator with other storage settings (5Gi of class `slow`) made it. */
function madeWithOtherStorage(sts: KubeObject): KubeObject {
  const made = structuredClone(sts) as any;
  made.metadata.annotations["agentplane.dev/spec-hash"] = "made-with-other-settings";
  made.spec.volumeClaimTemplates[0].spec.storageClassName = "slow";
  made.spec.volumeClaimTemplates[0].spec.resources.requests.storage = "5Gi";
  return made;
}

/** The managed Redis StatefulSet's pod, labelled as its template labels it. */
const redisPod = (status: LivePod["status"]): LivePod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: `${REDIS}-0`, namespace: "agents", labels: childLabels(deployment(), "redis") },
  status,
});
const redisCrashLooping = {
  phase: "Running",
  containerStatuses: [
    {
      name: "redis",
      restartCount: 3,
      state: { waiting: { reason: "CrashLoopBackOff" } },
      lastState: { terminated: { exitCode: 137, reason: "OOMKilled" } },
    },
  ],
};
const UNBOUND = "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.";
const redisUnbound = {
  phase: "Pending",
  conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable", message: UNBOUND }],
};
const REDIS_CRASH = `${REDIS}-0: container redis keeps crashing with exit code 137 (restarted 3 times)`;
const NOT_CREATED = `StatefulSet ${REDIS} could not create its pod (a ResourceQuota or LimitRange?): see kubectl describe statefulset ${REDIS}`;

const QUOTA_REFUSAL = `create Pod ${REDIS}-0 in StatefulSet ${REDIS} failed error: pods "${REDIS}-0" is forbidden: exceeded quota: compute, requested: requests.memory=256Mi, used: requests.memory=1Gi, limited: requests.memory=1Gi`;
const PSA_REFUSAL = `pods "${AGENT}-5d8f7-x2x9k" is forbidden: violates PodSecurity "restricted:latest": seccompProfile (pod or container "agent-server" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`;

/** A core/v1 Event of the StatefulSet controller about the Redis StatefulSet with `uid`. */
const redisEvent = (name: string, uid: string, at: string, message: string): KubeObject =>
  ({
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: `${REDIS}.${name}`, namespace: "agents" },
    involvedObject: { apiVersion: "apps/v1", kind: "StatefulSet", name: REDIS, namespace: "agents", uid },
    type: "Warning",
    reason: "FailedCreate",
    message,
    lastTimestamp: at,
  }) as KubeObject;

/** r1 rolling out, its agent pods waiting, while the managed Redis is in `redisStatus` with `pods`. */
function redisTrouble(what: string, redisStatus: object, pods: KubeObject[], conditions: string[]): Case {
  return {
    name: `managed Redis ${what}: reported on the deployment, the revision keeps deploying`,
    objects: [
      deployment({}, {}, { latestCreatedRevision: "r1", deploymentStatus: "AWAITING_DATABASE", readyReplicas: 0 }),
      revision("r1", 10, "DEPLOYING"),
      ...appliedChildren(deployment(), revision("r1", 10), { Deployment: stalled, StatefulSet: redisStatus }),
      ...pods,
    ],
    writes: [`status AgentDeployment ${NAME}`, "status AgentRevision r1"],
    status: {
      [NAME]: {
        observedGeneration: 1,
        latestCreatedRevision: "r1",
        readyReplicas: 0,
        deploymentStatus: "AWAITING_DATABASE",
        conditions,
      },
      r1: {
        observedGeneration: 1,
        revisionStatus: "DEPLOYING",
        message: "",
        readyReplicas: 0,
        conditions: ["Ready=Unknown Deploying"],
      },
    },
    requeue: POLL,
  };
}

const redisClaim = (finalizers?: string[]): KubeObject => ({
  apiVersion: "v1",
  kind: "PersistentVolumeClaim",
  metadata: {
    name: `data-${REDIS}-0`,
    namespace: "agents",
    labels: childLabels(deployment(), "redis"),
    ...(finalizers ? { finalizers } : {}),
  },
});

const deploying = (rev: string) => [
  `Ready=Unknown Deploying: rolling out revision ${rev}`,
  `Progressing=True Deploying: rolling out revision ${rev}`,
  "Degraded=False AsExpected",
];

/** cleanUp deletes every child by name, whether or not it exists (a missing one counts as deleted). */
const teardown = [
  `delete HorizontalPodAutoscaler ${AGENT}`,
  `delete Deployment ${AGENT}`,
  `delete Service ${AGENT}`,
  `delete StatefulSet ${REDIS}`,
  `delete Service ${REDIS}`,
  `delete Secret ${REDIS}`,
  `delete NetworkPolicy ${AGENT}`,
  `delete NetworkPolicy ${REDIS}`,
  `delete PersistentVolumeClaim data-${REDIS}-0`,
];

const cases: Case[] = [
  {
    name: "no AgentDeployment in the cache: nothing to do",
    objects: [],
    writes: [],
    requeue: undefined,
  },
  {
    name: "first deploy: takes the finalizer, applies Redis and the agent server, revision DEPLOYING",
    objects: [deployment({}, { finalizers: undefined }), revision("r1", 10, "AWAITING_DEPLOY")],
    writes: [
      `patch AgentDeployment ${NAME}: test /metadata/resourceVersion; add /metadata/finalizers ["${CLEANUP_FINALIZER}"]`,
      `create Secret ${REDIS}`,
      `apply StatefulSet ${REDIS}`,
      `apply Service ${REDIS}`,
      `apply NetworkPolicy ${REDIS}`,
      `apply Deployment ${AGENT}`,
      `apply Service ${AGENT}`,
      `apply NetworkPolicy ${AGENT}`,
      `status AgentDeployment ${NAME}`,
      "status AgentRevision r1",
    ],
    applied: {
      [`Deployment ${AGENT}`]: {
        metadata: { ownerReferences: [{ kind: "AgentDeployment", name: NAME, uid: "uid-agd", controller: true }] },
        spec: {
          replicas: 1,
          template: {
            metadata: { labels: { "agentplane.dev/revision-id": "r1" } },
            spec: { containers: [{ name: "agent-server", image: "example/agent:1" }] },
          },
        },
      },
      [`Service ${AGENT}`]: { spec: { type: "ClusterIP", ports: [{ port: 8000 }] } },
    },
    status: {
      [NAME]: {
        observedGeneration: 1,
        latestCreatedRevision: "r1",
        readyReplicas: 0,
        deploymentStatus: "AWAITING_DATABASE",
        conditions: deploying("r1"),
      },
      r1: {
        observedGeneration: 1,
        revisionStatus: "DEPLOYING",
        message: "",
        readyReplicas: 0,
        conditions: ["Ready=Unknown Deploying"],
      },
    },
    events: [
      `Normal Created Created Secret ${REDIS}`,
      `Normal Created Created StatefulSet ${REDIS}`,
      `Normal Created Created Service ${REDIS}`,
      `Normal Created Created NetworkPolicy ${REDIS}`,
      `Normal Created Created Deployment ${AGENT}`,
      `Normal Created Created Service ${AGENT}`,
      `Normal Created Created NetworkPolicy ${AGENT}`,
      "Normal Deploying Revision r1 is DEPLOYING",
    ],
    requeue: POLL,
  },
  {
    name: "first deploy with an external Redis and an autoscaler: no Redis, an HPA instead of fixed replicas",
    objects: [
      deployment({ redis: { externalUrlSecretRef: { name: REDIS_URL_SECRET, key: "url" } } }),
      revision("r1", 10, "AWAITING_DEPLOY", { resources: { minScale: 1, maxScale: 3, cpu: 0.5 } }),
    ],
    writes: [
      `apply Deployment ${AGENT}`,
      `apply Service ${AGENT}`,
      `apply NetworkPolicy ${AGENT}`,
      `apply HorizontalPodAutoscaler ${AGENT}`,
      `status AgentDeployment ${NAME}`,
      "status AgentRevision r1",
    ],
    applied: {
      [`HorizontalPodAutoscaler ${AGENT}`]: { spec: { minReplicas: 1, maxReplicas: 3 } },
    },
    status: {
      [NAME]: {
        observedGeneration: 1,
        latestCreatedRevision: "r1",
        readyReplicas: 0,
        deploymentStatus: "READY",
        conditions: deploying("r1"),
      },
      r1: {
        observedGeneration: 1,
        revisionStatus: "DEPLOYING",
        message: "",
        readyReplicas: 0,
        conditions: ["Ready=Unknown Deploying"],
      },
    },
    events: [
      `Normal Created Created Deployment ${AGENT}`,
      `Normal Created Created Service ${AGENT}`,
      `Normal Created Created NetworkPolicy ${AGENT}`,
      `Normal Created Created HorizontalPodAutoscaler ${AGENT}`,
      "Normal Deploying Revision r1 is DEPLOYING",
    ],
    requeue: POLL,
  },
  {
    name: "rollout complete: revision DEPLOYED, the deployment names it ready with its URL",
    objects: [
      deployment({}, {}, { latestCreatedRevision: "r1", deploymentStatus: "READY", readyReplicas: 0 }),
      revision("r1", 10, "DEPLOYING"),
      ...appliedChildren(deployment(), revision("r1", 10), { Deployment: rolledOut, StatefulSet: redisUp }),
    ],
    writes: [`status AgentDeployment ${NAME}`, "status AgentRevision r1"],
    status: {
      [NAME]: {
        observedGeneration: 1,
        latestCreatedRevision: "r1",
        latestReadyRevision: "r1",
        url: URL,
        readyReplicas: 1,
        deploymentStatus: "READY",
        conditions: [
          "Ready=True RevisionReady: 1 of 1 replicas available",
          "Progressing=False RolloutComplete: 1 of 1 replicas available",
          "Degraded=False AsExpected",
        ],
      },
      r1: {
        observedGeneration: 1,
        revisionStatus: "DEPLOYED",
        message: "",
        readyReplicas: 1,
        conditions: ["Ready=True RolloutComplete"],
      },
    },
    events: ["Normal RolloutComplete Revision r1 is DEPLOYED"],
    requeue: undefined,
  },
  (() => {
    const scaled = { resources: { minScale: 1, maxScale: 3, cpu: 0.5 } };
    const noMetrics =
      "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API";
    return {
      name: "rollout complete, the HPA cannot compute a count: Ready, and an Autoscaling=False condition with its words",
      objects: [
        deployment({}, {}, { latestCreatedRevision: "r1", deploymentStatus: "READY", readyReplicas: 0 }),
        revision("r1", 10, "DEPLOYING", scaled),
        ...appliedChildren(deployment(), revision("r1", 10, undefined, scaled), {
          Deployment: rolledOut,
          StatefulSet: redisUp,
          HorizontalPodAutoscaler: {
            desiredReplicas: 0,
            conditions: [
              { type: "ScalingActive", status: "False", reason: "FailedGetResourceMetric", message: noMetrics },
            ],
          },
        }),
      ],
      writes: [`status AgentDeployment ${NAME}`, "status AgentRevision r1"],
      status: {
        [NAME]: {
          observedGeneration: 1,
          latestCreatedRevision: "r1",
          latestReadyRevision: "r1",
          url: URL,
          readyReplicas: 1,
          deploymentStatus: "READY",
          conditions: [
            "Ready=True RevisionReady: 1 of 1 replicas available",
            "Progressing=False RolloutComplete: 1 of 1 replicas available",
            "Degraded=False AsExpected",
            `Autoscaling=False FailedGetResourceMetric: ${noMetrics}`,
          ],
        },
        r1: {
          observedGeneration: 1,
          revisionStatus: "DEPLOYED",
          message: "",
          readyReplicas: 1,
          conditions: ["Ready=True RolloutComplete"],
        },
      },
      events: ["Normal RolloutComplete Revision r1 is DEPLOYED"],
      requeue: undefined,
    } satisfies Case;
  })(),
  {
    name: "rollout complete behind a load balancer: the URL is its address",
    objects: [
      deployment({ redis: { externalUrlSecretRef: { name: REDIS_URL_SECRET, key: "url" } } }),
      revision("r1", 10, "DEPLOYING"),
      ...appliedChildren(
        deployment({ redis: { externalUrlSecretRef: { name: REDIS_URL_SECRET, key: "url" } } }),
        revision("r1", 10),
        { Deployment: rolledOut, Service: { loadBalancer: { ingress: [{ ip: "203.0.113.7" }] } } },
      ),
    ],
    writes: [`status AgentDeployment ${NAME}`, "status AgentRevision r1"],
    status: {
      [NAME]: {
        observedGeneration: 1,
        latestCreatedRevision: "r1",
        latestReadyRevision: "r1",
        url: "http://203.0.113.7:8000",
        readyReplicas: 1,
        deploymentStatus: "READY",
        conditions: [
          "Ready=True RevisionReady: 1 of 1 replicas available",
          "Progressing=False RolloutComplete: 1 of 1 replicas available",
          "Degraded=False AsExpected",
        ],
      },
      r1: {
        observedGeneration: 1,
        revisionStatus: "DEPLOYED",
        message: "",
        readyReplicas: 1,
        conditions: ["Ready=True RolloutComplete"],
      },
    },
    events: ["Normal RolloutComplete Revision r1 is DEPLOYED"],
    requeue: undefined,
  },
  {
    name: "new revision: the Deployment is updated, the last ready revision stays until it is DEPLOYED",
    objects: [
      deployment(
        { revisionName: "r2" },
        { generation: 2 },
        {
          latestCreatedRevision: "r1",
          latestReadyRevision: "r1",
          url: URL,
          deploymentStatus: "READY",
          readyReplicas: 1,
        },
      ),
      revision("r1", 10, "DEPLOYED"),
      revision("r2", 20, "AWAITING_DEPLOY", { image: "example/agent:2" }),
      ...appliedChildren(deployment(), revision("r1", 10), { Deployment: rolledOut, StatefulSet: redisUp }),
    ],
    writes: [`apply Deployment ${AGENT}`, `status AgentDeployment ${NAME}`, "status AgentRevision r2"],
    applied: {
      [`Deployment ${AGENT}`]: {
        spec: {
          template: {
            metadata: { labels: { "agentplane.dev/revision-id": "r2" } },
            spec: { containers: [{ image: "example/agent:2" }] },
          },
        },
      },
    },
    status: {
      [NAME]: {
        observedGeneration: 2,
        latestCreatedRevision: "r2",
        latestReadyRevision: "r1",
        url: URL,
        readyReplicas: 1,
        deploymentStatus: "READY",
        conditions: deploying("r2"),
      },
      // The old ReplicaSet's ready replica is counted for the revision rolling out.
      r2: {
        observedGeneration: 1,
        revisionStatus: "DEPLOYING",
        message: "",
        readyReplicas: 1,
        conditions: ["Ready=Unknown Deploying"],
      },
    },
    events: [`Normal Updated Updated Deployment ${AGENT}`, "Normal Deploying Revision r2 is DEPLOYING"],
    requeue: POLL,
  },
  {
    name: "superseded revisions: waiting ones SKIPPED, a rolling-out one INTERRUPTED, others untouched",
    objects: [
      deployment({ revisionName: "r3" }, { generation: 3 }),
      revision("r0", 5, "DEPLOYED"),
      revision("r1", 10, "DEPLOYING"),
      revision("r2", 20, "AWAITING_DEPLOY"),
      revision("r3", 30, "AWAITING_DEPLOY"),
      // Created in the same second as r3 or after it: the deployment may be about to name it.
      revision("r3b", 30, "CREATING"),
      revision("r4", 40, "CREATING"),
      ...appliedChildren(deployment(), revision("r1", 10), { Deployment: stalled, StatefulSet: redisUp }),
    ],
    writes: [
      `apply Deployment ${AGENT}`,
      `status AgentDeployment ${NAME}`,
      "status AgentRevision r3",
      "status AgentRevision r1",
      "status AgentRevision r2",
    ],
    status: {
      [NAME]: {
        observedGeneration: 3,
        latestCreatedRevision: "r3",
        readyReplicas: 0,
        deploymentStatus: "READY",
        conditions: deploying("r3"),
      },
      r3: {
        observedGeneration: 1,
        revisionStatus: "DEPLOYING",
        message: "",
        readyReplicas: 0,
        conditions: ["Ready=Unknown Deploying"],
      },
      r1: {
        observedGeneration: 1,
        revisionStatus: "INTERRUPTED",
        message: "superseded by revision r3",
        readyReplicas: 0,
        conditions: ["Ready=False Superseded: superseded by revision r3"],
      },
      r2: {
        observedGeneration: 1,
        revisionStatus: "SKIPPED",
        message: "superseded by revision r3",
        readyReplicas: 0,
        conditions: ["Ready=False Superseded: superseded by revision r3"],
      },
    },
    events: [
      `Normal Updated Updated Deployment ${AGENT}`,
      "Normal Deploying Revision r3 is DEPLOYING",
      "Normal Superseded Revision r1 is INTERRUPTED: superseded by revision r3",
      "Normal Superseded Revision r2 is SKIPPED: superseded by revision r3",
    ],
    requeue: POLL,
  },
  {
    name: "missing revision: nothing applied, no status written, looks again after pollMs",
    objects: [deployment({ revisionName: "r9" }), revision("r1", 10, "DEPLOYED")],
    writes: [],
    requeue: POLL,
  },
  {
    name: "another controller's finalizer: ours is appended (before the revision even exists)",
    objects: [deployment({}, { finalizers: ["example.com/keep"] })],
    writes: [
      `patch AgentDeployment ${NAME}: test /metadata/resourceVersion; add /metadata/finalizers/- "${CLEANUP_FINALIZER}"`,
    ],
    requeue: POLL,
  },
  {
    name: "deletion: AWAITING_DELETE, every child and the Redis claim deleted, then the finalizer released",
    objects: [
      deployment(
        {},
        { deletionTimestamp: second(50) },
        {
          latestCreatedRevision: "r1",
          latestReadyRevision: "r1",
          url: URL,
          deploymentStatus: "READY",
          readyReplicas: 1,
        },
      ),
      revision("r1", 10, "DEPLOYED", { resources: { maxScale: 3, cpu: 0.5 } }),
      ...appliedChildren(deployment(), revision("r1", 10, undefined, { resources: { maxScale: 3, cpu: 0.5 } }), {
        Deployment: rolledOut,
        StatefulSet: redisUp,
      }),
      redisClaim(),
    ],
    writes: [
      `status AgentDeployment ${NAME}`,
      ...teardown,
      `patch AgentDeployment ${NAME}: test /metadata/resourceVersion; replace /metadata/finalizers []`,
    ],
    status: {
      [NAME]: {
        latestCreatedRevision: "r1",
        latestReadyRevision: "r1",
        url: URL,
        readyReplicas: 1,
        deploymentStatus: "AWAITING_DELETE",
        conditions: ["Ready=False Deleting: removing the deployment's resources"],
      },
    },
    events: ["Normal Deleting Removing the agent server, its Service and Redis"],
    requeue: undefined,
    after: (cluster) => expect(cluster.get(resources.agentDeployment, "agents", NAME)).toBeUndefined(),
  },
  {
    name: "deletion waits while a child is still terminating (a claim held by pvc-protection)",
    objects: [
      deployment({}, { deletionTimestamp: second(50) }),
      revision("r1", 10, "DEPLOYED"),
      redisClaim(["kubernetes.io/pvc-protection"]),
    ],
    writes: [`status AgentDeployment ${NAME}`, ...teardown],
    status: {
      [NAME]: {
        deploymentStatus: "AWAITING_DELETE",
        conditions: ["Ready=False Deleting: removing the deployment's resources"],
      },
    },
    events: ["Normal Deleting Removing the agent server, its Service and Redis"],
    requeue: 1000,
    // Deletes are sent again on every pass until the claim is gone.
    again: teardown,
    after: (cluster) =>
      expect(cluster.get(resources.agentDeployment, "agents", NAME)?.metadata?.finalizers).toEqual([CLEANUP_FINALIZER]),
  },
  {
    name: "deletion without our finalizer: nothing to clean up",
    objects: [deployment({}, { deletionTimestamp: second(50), finalizers: ["example.com/keep"] })],
    writes: [],
    requeue: undefined,
  },
  {
    name: "children no longer desired are deleted: Redis when it becomes external, the HPA when maxScale drops",
    objects: [
      deployment(
        { revisionName: "r2", redis: { externalUrlSecretRef: { name: REDIS_URL_SECRET, key: "url" } } },
        { generation: 2 },
      ),
      revision("r1", 10, "DEPLOYED", { resources: { maxScale: 3, cpu: 0.5 } }),
      revision("r2", 20, "AWAITING_DEPLOY"),
      ...appliedChildren(deployment(), revision("r1", 10, undefined, { resources: { maxScale: 3, cpu: 0.5 } }), {
        Deployment: rolledOut,
        StatefulSet: redisUp,
      }),
    ],
    writes: [
      `apply Deployment ${AGENT}`,
      `delete StatefulSet ${REDIS}`,
      `delete Service ${REDIS}`,
      `delete NetworkPolicy ${REDIS}`,
      `delete HorizontalPodAutoscaler ${AGENT}`,
      // looked up first: the operator does not watch Secrets
      `delete Secret ${REDIS}`,
      `status AgentDeployment ${NAME}`,
      "status AgentRevision r2",
    ],
    applied: {
      [`Deployment ${AGENT}`]: {
        spec: {
          replicas: 1,
          template: {
            spec: {
              containers: [
                {
                  env: [
                    { name: "PORT" },
                    { name: "HOST" },
                    { name: "REDIS_URI", valueFrom: { secretKeyRef: { name: REDIS_URL_SECRET } } },
                    { name: "REDIS_PREFIX" },
                    { name: "AGENTPLANE_API_KEYS" },
                    { name: "AGENTPLANE_API_KEYS_FILE" },
                    { name: "NODE_OPTIONS" },
                  ],
                },
              ],
            },
          },
        },
      },
    },
    status: {
      [NAME]: {
        observedGeneration: 2,
        latestCreatedRevision: "r2",
        readyReplicas: 1,
        deploymentStatus: "READY",
        conditions: deploying("r2"),
      },
      r2: {
        observedGeneration: 1,
        revisionStatus: "DEPLOYING",
        message: "",
        readyReplicas: 1,
        conditions: ["Ready=Unknown Deploying"],
      },
    },
    events: [
      `Normal Updated Updated Deployment ${AGENT}`,
      `Normal Deleted Deleted StatefulSet ${REDIS}`,
      `Normal Deleted Deleted Service ${REDIS}`,
      `Normal Deleted Deleted NetworkPolicy ${REDIS}`,
      `Normal Deleted Deleted HorizontalPodAutoscaler ${AGENT}`,
      `Normal Deleted Deleted Secret ${REDIS}`,
      "Normal Deploying Revision r2 is DEPLOYING",
    ],
    requeue: POLL,
  },
  {
    name: "a spec the pod policy refuses: nothing rendered, the revision fails naming the field, the old one keeps serving",
    objects: [
      deployment({ revisionName: "r2" }, { generation: 2 }, { latestReadyRevision: "r1", url: URL }),
      revision("r1", 10, "DEPLOYED"),
      revision("r2", 20, "AWAITING_DEPLOY", {
        resources: { volumes: [{ name: "root", hostPath: { path: "/" } }] },
      }),
      ...appliedChildren(deployment(), revision("r1", 10), { Deployment: rolledOut, StatefulSet: redisUp }),
    ],
    writes: [`status AgentDeployment ${NAME}`, "status AgentRevision r2"],
    status: {
      [NAME]: {
        observedGeneration: 2,
        latestCreatedRevision: "r2",
        latestReadyRevision: "r1",
        url: URL,
        readyReplicas: 1,
        deploymentStatus: "READY",
        conditions: [
          `Ready=False RevisionFailed: SpecRejected: ${HOST_PATH_REFUSED}`,
          `Progressing=False RolloutFailed: SpecRejected: ${HOST_PATH_REFUSED}`,
          `Degraded=True SpecRejected: ${HOST_PATH_REFUSED}`,
        ],
      },
      r2: {
        observedGeneration: 1,
        revisionStatus: "DEPLOY_FAILED",
        message: `SpecRejected: ${HOST_PATH_REFUSED}`,
        readyReplicas: 0,
        conditions: [`Ready=False SpecRejected: SpecRejected: ${HOST_PATH_REFUSED}`],
      },
    },
    events: [`Warning SpecRejected Revision r2 is DEPLOY_FAILED: SpecRejected: ${HOST_PATH_REFUSED}`],
    // Nothing changes until the custom resources do; their watch events bring the key back.
    requeue: undefined,
    after: (cluster) =>
      expect(
        (cluster.get(resources.deployment, "agents", AGENT) as any).spec.template.metadata.labels[
          "agentplane.dev/revision-id"
        ],
      ).toBe("r1"),
  },
  {
    name: "a foreign Secret an administrator shared with the workspace is rendered",
    objects: [
      deployment({}, { finalizers: [CLEANUP_FINALIZER] }),
      revision("r1", 10, "DEPLOYING", {
        secretReferences: [{ name: "LLM_KEY", secretName: "org-llm", secretKey: "key" }],
      }),
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: {
          name: "org-llm",
          namespace: "agents",
          annotations: { "agentplane.dev/shared-with-workspaces": "tenant-9, tenant-1" },
        },
      },
      ...appliedChildren(deployment(), revision("r1", 10), { Deployment: rolledOut, StatefulSet: redisUp }),
    ],
    writes: [`apply Deployment ${AGENT}`, `status AgentDeployment ${NAME}`, "status AgentRevision r1"],
    status: {
      [NAME]: {
        observedGeneration: 1,
        latestCreatedRevision: "r1",
        readyReplicas: 1,
        deploymentStatus: "READY",
        conditions: deploying("r1"),
      },
      r1: {
        observedGeneration: 1,
        revisionStatus: "DEPLOYING",
        message: "",
        readyReplicas: 1,
        conditions: ["Ready=Unknown Deploying"],
      },
    },
    events: [`Normal Updated Updated Deployment ${AGENT}`],
    requeue: POLL,
    after: (cluster) =>
      expect(
        (cluster.get(resources.deployment, "agents", AGENT) as any).spec.template.spec.containers[0].env,
      ).toContainEqual({ name: "LLM_KEY", valueFrom: { secretKeyRef: { name: "org-llm", key: "key" } } }),
  },
  {
    name: "a child of that name that someone else owns is left alone",
    objects: [
      deployment({ redis: { externalUrlSecretRef: { name: REDIS_URL_SECRET, key: "url" } } }),
      revision("r1", 10, "DEPLOYED"),
      ...appliedChildren(
        deployment({ redis: { externalUrlSecretRef: { name: REDIS_URL_SECRET, key: "url" } } }),
        revision("r1", 10),
        {
          Deployment: rolledOut,
        },
      ),
      ...appliedChildren(deployment({}, { uid: "uid-other" }), revision("r1", 10)).filter(
        (c) => c.kind === "StatefulSet",
      ),
    ],
    writes: [`status AgentDeployment ${NAME}`, "status AgentRevision r1"],
    status: {
      [NAME]: {
        observedGeneration: 1,
        latestCreatedRevision: "r1",
        latestReadyRevision: "r1",
        url: URL,
        readyReplicas: 1,
        deploymentStatus: "READY",
        conditions: [
          "Ready=True RevisionReady: 1 of 1 replicas available",
          "Progressing=False RolloutComplete: 1 of 1 replicas available",
          "Degraded=False AsExpected",
        ],
      },
      r1: {
        observedGeneration: 1,
        revisionStatus: "DEPLOYED",
        message: "",
        readyReplicas: 1,
        conditions: ["Ready=True RolloutComplete"],
      },
    },
    requeue: undefined,
  },
  failure(
    "crash-looping pod",
    crashLooping,
    "CrashLoopBackOff",
    `${AGENT}-abc: container agent-server keeps crashing with exit code 3 (restarted 4 times)`,
  ),
  failure(
    "image pull error",
    pullFailing,
    "ImagePullBackOff",
    `${AGENT}-abc: container agent-server cannot pull its image (ErrImagePull): manifest unknown`,
  ),
  failure("unschedulable pod", unschedulable, "Unschedulable", `${AGENT}-abc: 0/3 nodes: Insufficient cpu`),
  failure(
    "progress deadline exceeded",
    { phase: "Running" },
    "ProgressDeadlineExceeded",
    "ReplicaSet has timed out progressing.",
    {
      ...stalled,
      conditions: [
        {
          type: "Progressing",
          status: "False",
          reason: "ProgressDeadlineExceeded",
          message: "ReplicaSet has timed out progressing.",
        },
      ],
    },
  ),
  {
    name: "Redis storage settings changed since the StatefulSet was made: live claims kept, a Warning",
    objects: [
      deployment({}, {}, { latestCreatedRevision: "r1", deploymentStatus: "READY", readyReplicas: 1 }),
      revision("r1", 10, "DEPLOYING"),
      ...appliedChildren(deployment(), revision("r1", 10), { Deployment: rolledOut, StatefulSet: redisUp }).map(
        (child) => (child.kind === "StatefulSet" ? madeWithOtherStorage(child) : child),
      ),
    ],
    writes: [`apply StatefulSet ${REDIS}`, `status AgentDeployment ${NAME}`, "status AgentRevision r1"],
    applied: {
      [`StatefulSet ${REDIS}`]: {
        spec: {
          volumeClaimTemplates: [
            {
              metadata: { name: "data" },
              spec: { storageClassName: "slow", resources: { requests: { storage: "5Gi" } } },
            },
          ],
        },
      },
    },
    status: {
      [NAME]: {
        observedGeneration: 1,
        latestCreatedRevision: "r1",
        latestReadyRevision: "r1",
        url: URL,
        readyReplicas: 1,
        deploymentStatus: "READY",
        conditions: [
          "Ready=True RevisionReady: 1 of 1 replicas available",
          "Progressing=False RolloutComplete: 1 of 1 replicas available",
          "Degraded=False AsExpected",
        ],
      },
      r1: {
        observedGeneration: 1,
        revisionStatus: "DEPLOYED",
        message: "",
        readyReplicas: 1,
        conditions: ["Ready=True RolloutComplete"],
      },
    },
    events: [
      `Normal Updated Updated StatefulSet ${REDIS}`,
      `Warning StorageUnchanged StatefulSet ${REDIS} keeps its volume claim templates, which Kubernetes never changes (data: size 5Gi kept, 1Gi not applied; data: storage class slow kept, (default) not applied); see "Changing the Redis storage" in the operator docs`,
      "Normal RolloutComplete Revision r1 is DEPLOYED",
    ],
    requeue: undefined,
  },
  {
    name: "managed Redis crash-looping: the rollout fails with Redis's reason, not a later deadline",
    objects: [
      deployment({}, {}, { latestCreatedRevision: "r1", deploymentStatus: "AWAITING_DATABASE", readyReplicas: 0 }),
      revision("r1", 10, "DEPLOYING"),
      ...appliedChildren(deployment(), revision("r1", 10), {
        Deployment: stalled,
        StatefulSet: { observedGeneration: 1, replicas: 1, readyReplicas: 0 },
      }),
      redisPod(redisCrashLooping),
    ],
    writes: [`status AgentDeployment ${NAME}`, "status AgentRevision r1"],
    status: {
      [NAME]: {
        observedGeneration: 1,
        latestCreatedRevision: "r1",
        readyReplicas: 0,
        deploymentStatus: "AWAITING_DATABASE",
        conditions: [
          `Ready=False RevisionFailed: CrashLoopBackOff: managed Redis ${REDIS_CRASH}`,
          `Progressing=False RolloutFailed: CrashLoopBackOff: managed Redis ${REDIS_CRASH}`,
          `Degraded=True CrashLoopBackOff: managed Redis ${REDIS_CRASH}`,
        ],
      },
      r1: {
        observedGeneration: 1,
        revisionStatus: "DEPLOY_FAILED",
        message: `CrashLoopBackOff: managed Redis ${REDIS_CRASH}`,
        readyReplicas: 0,
        conditions: [`Ready=False CrashLoopBackOff: CrashLoopBackOff: managed Redis ${REDIS_CRASH}`],
      },
    },
    events: [`Warning CrashLoopBackOff Revision r1 is DEPLOY_FAILED: CrashLoopBackOff: managed Redis ${REDIS_CRASH}`],
    requeue: POLL,
  },
  redisTrouble(
    "pod unschedulable (no StorageClass binds its volume)",
    { observedGeneration: 1, replicas: 1, readyReplicas: 0 },
    [redisPod(redisUnbound)],
    [
      `Ready=Unknown AwaitingDatabase: waiting for Redis: ${REDIS}-0: ${UNBOUND}`,
      "Progressing=True Deploying: rolling out revision r1",
      `Degraded=True RedisUnschedulable: ${REDIS}-0: ${UNBOUND}`,
    ],
  ),
  redisTrouble(
    "pod never created, no Event (yet) saying why",
    { observedGeneration: 1, replicas: 0 },
    [],
    [
      `Ready=Unknown AwaitingDatabase: waiting for Redis: ${NOT_CREATED}`,
      "Progressing=True Deploying: rolling out revision r1",
      `Degraded=True RedisPodNotCreated: ${NOT_CREATED}`,
    ],
  ),
  {
    name: "managed Redis pod refused by a quota (its StatefulSet's FailedCreate Event): the revision fails with the quota's words",
    objects: [
      deployment({}, {}, { latestCreatedRevision: "r1", deploymentStatus: "AWAITING_DATABASE", readyReplicas: 0 }),
      revision("r1", 10, "DEPLOYING"),
      ...appliedChildren(deployment(), revision("r1", 10), {
        Deployment: stalled,
        StatefulSet: { observedGeneration: 1, replicas: 0 },
      }),
      redisEvent("now", `uid-StatefulSet-${REDIS}`, second(30), QUOTA_REFUSAL),
      // An older StatefulSet of the same name (deleted since) is not this one.
      redisEvent("old", "uid-of-an-older-statefulset", second(40), "create Pod failed error: an older refusal"),
    ],
    writes: [`status AgentDeployment ${NAME}`, "status AgentRevision r1"],
    status: {
      [NAME]: {
        observedGeneration: 1,
        latestCreatedRevision: "r1",
        readyReplicas: 0,
        deploymentStatus: "AWAITING_DATABASE",
        conditions: [
          `Ready=False RevisionFailed: FailedCreate: managed Redis ${QUOTA_REFUSAL}`,
          `Progressing=False RolloutFailed: FailedCreate: managed Redis ${QUOTA_REFUSAL}`,
          `Degraded=True FailedCreate: managed Redis ${QUOTA_REFUSAL}`,
        ],
      },
      r1: {
        observedGeneration: 1,
        revisionStatus: "DEPLOY_FAILED",
        message: `FailedCreate: managed Redis ${QUOTA_REFUSAL}`,
        readyReplicas: 0,
        conditions: [`Ready=False FailedCreate: FailedCreate: managed Redis ${QUOTA_REFUSAL}`],
      },
    },
    events: [`Warning FailedCreate Revision r1 is DEPLOY_FAILED: FailedCreate: managed Redis ${QUOTA_REFUSAL}`],
    requeue: POLL,
  },
  (() => {
    // No pod at all: Pod Security admission refuses each one the ReplicaSet creates.
    const refused = failure(
      "pods refused by Pod Security admission (the Deployment's ReplicaFailure)",
      {},
      "FailedCreate",
      `Deployment ${AGENT} cannot create pods: ${PSA_REFUSAL}`,
      {
        ...stalled,
        replicas: 0,
        updatedReplicas: 0,
        conditions: [{ type: "ReplicaFailure", status: "True", reason: "FailedCreate", message: PSA_REFUSAL }],
      },
    );
    return { ...refused, objects: refused.objects.filter((o) => o.kind !== "Pod") };
  })(),
  {
    name: "a DEPLOYED revision stays DEPLOYED when its pod later crash-loops; the deployment is Degraded",
    objects: [
      deployment(
        {},
        {},
        {
          latestCreatedRevision: "r1",
          latestReadyRevision: "r1",
          url: URL,
          deploymentStatus: "READY",
          readyReplicas: 1,
        },
      ),
      revision("r1", 10, "DEPLOYED"),
      ...appliedChildren(deployment(), revision("r1", 10), { Deployment: stalled, StatefulSet: redisUp }),
      agentPod(deployment(), revision("r1", 10), `${AGENT}-abc`, crashLooping),
    ],
    writes: [`status AgentDeployment ${NAME}`, "status AgentRevision r1"],
    status: {
      [NAME]: {
        observedGeneration: 1,
        latestCreatedRevision: "r1",
        latestReadyRevision: "r1",
        url: URL,
        readyReplicas: 0,
        deploymentStatus: "READY",
        conditions: [
          "Ready=Unknown Deploying: rolling out revision r1",
          "Progressing=True Deploying: rolling out revision r1",
          `Degraded=True CrashLoopBackOff: ${AGENT}-abc: container agent-server keeps crashing with exit code 3 (restarted 4 times)`,
        ],
      },
      r1: {
        observedGeneration: 1,
        revisionStatus: "DEPLOYED",
        message: "",
        readyReplicas: 0,
        conditions: ["Ready=True RolloutComplete"],
      },
    },
    requeue: POLL,
  },
];

/** The active revision r1 fails while rolling out: DEPLOY_FAILED with the reason, the deployment Degraded. */
function failure(
  what: string,
  podStatus: object,
  reason: string,
  detail: string,
  deploymentStatus: object = stalled,
): Case {
  const message = `${reason}: ${detail}`;
  return {
    name: `failure, ${what}: revision DEPLOY_FAILED (${reason}), deployment Ready=False`,
    objects: [
      deployment({}, {}, { latestCreatedRevision: "r1", deploymentStatus: "READY", readyReplicas: 0 }),
      revision("r1", 10, "DEPLOYING"),
      ...appliedChildren(deployment(), revision("r1", 10), { Deployment: deploymentStatus, StatefulSet: redisUp }),
      agentPod(deployment(), revision("r1", 10), `${AGENT}-abc`, podStatus),
    ],
    writes: [`status AgentDeployment ${NAME}`, "status AgentRevision r1"],
    status: {
      [NAME]: {
        observedGeneration: 1,
        latestCreatedRevision: "r1",
        readyReplicas: 0,
        deploymentStatus: "READY",
        conditions: [
          `Ready=False RevisionFailed: ${message}`,
          `Progressing=False RolloutFailed: ${message}`,
          `Degraded=True ${reason}: ${detail}`,
        ],
      },
      r1: {
        observedGeneration: 1,
        revisionStatus: "DEPLOY_FAILED",
        message,
        readyReplicas: 0,
        conditions: [`Ready=False ${reason}: ${message}`],
      },
    },
    events: [`Warning ${reason} Revision r1 is DEPLOY_FAILED: ${message}`],
    requeue: POLL,
  };
}

describe("Reconciler.reconcile", () => {
  it.each(cases.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const cluster = await recordingCluster(c.objects);
    const reconciler = cluster.reconciler({ pollMs: POLL });
    const result = await reconciler.reconcile(KEY);
    expect({
      writes: cluster.writes.map(describeWrite),
      status: writtenStatuses(cluster.writes),
      events: cluster.events,
      requeue: result?.requeueAfterMs,
    }).toEqual({ writes: c.writes, status: c.status ?? {}, events: c.events ?? [], requeue: c.requeue });
    for (const [what, fields] of Object.entries(c.applied ?? {})) {
      const write = cluster.writes.find((w) => w.verb === "apply" && `${w.kind} ${w.name}` === what);
      expect(write?.body, what).toMatchObject(fields);
    }
    c.after?.(cluster);

    cluster.sync();
    const sent = cluster.writes.length;
    await reconciler.reconcile(KEY);
    expect(cluster.writes.slice(sent).map(describeWrite), "writes of a second reconcile").toEqual(c.again ?? []);
  });
});

/** One line per write; the bodies of status patches are compared separately (`writtenStatuses`). */
function describeWrite(write: RecordedWrite): string {
  const target = `${write.kind} ${write.name}`;
  if (write.verb === "merge-patch" && write.subresource === "status") return `status ${target}`;
  if (write.verb === "json-patch") {
    const ops = (write.body as { op: string; path: string; value?: unknown }[]).map((op) =>
      op.op === "test" ? `test ${op.path}` : `${op.op} ${op.path} ${JSON.stringify(op.value)}`,
    );
    return `patch ${target}: ${ops.join("; ")}`;
  }
  return `${write.verb} ${target}`;
}

function writtenStatuses(writes: RecordedWrite[]): Record<string, object> {
  const statuses: Record<string, object> = {};
  for (const write of writes) {
    if (write.subresource !== "status") continue;
    const { conditions, ...rest } = (write.body as { status: { conditions?: Condition[] } }).status;
    statuses[write.name] = { ...rest, conditions: conditions?.map(describeCondition) };
  }
  return statuses;
}

function describeCondition(c: Condition): string {
  return `${c.type}=${c.status} ${c.reason}${c.message ? `: ${c.message}` : ""}`;
}
