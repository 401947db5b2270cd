import { childLabels } from "../build/names.ts";
import type { KubeObject } from "../kube/client.ts";
import type { LivePod } from "../status/rollout.ts";
import { appliedChildren } from "../testing/fixtures.ts";
import {
  type Case,
  deployment,
  NAME,
  POLL,
  REDIS,
  r1Deployed,
  reconcileTable,
  redisUp,
  revision,
  rolledOut,
  second,
  stalled,
} from "./testing/table.ts";

/** Reconcile table: the managed Redis (storage changes, pods that crash, wait or are refused). */

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

const cases: Case[] = [
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
    status: r1Deployed(),
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
];

reconcileTable(cases);
