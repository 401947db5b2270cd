import { agentPod, appliedChildren } from "../testing/fixtures.ts";
import {
  AGENT,
  type Case,
  deployment,
  NAME,
  POLL,
  reconcileTable,
  redisUp,
  revision,
  stalled,
  URL,
} from "./testing/table.ts";

/** Reconcile table: agent pods that fail a rollout, and a deployed revision that fails later. */

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

const PSA_REFUSAL = `pods "${AGENT}-5d8f7-x2x9k" is forbidden: violates PodSecurity "restricted:latest": seccompProfile (pod or container "agent-server" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`;

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

const cases: Case[] = [
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

reconcileTable(cases);
