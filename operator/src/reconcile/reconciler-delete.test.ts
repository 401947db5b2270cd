import { CLEANUP_FINALIZER } from "@agentplane/crds";
import { expect } from "vitest";
import { childLabels } from "../build/names.ts";
import type { KubeObject } from "../kube/client.ts";
import { resources } from "../kube/resources.ts";
import { appliedChildren } from "../testing/fixtures.ts";
import {
  AGENT,
  type Case,
  deployment,
  NAME,
  REDIS,
  reconcileTable,
  redisUp,
  revision,
  rolledOut,
  second,
  URL,
} from "./testing/table.ts";

/** Reconcile table: deletion, the finalizer's cleanup. */

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
];

reconcileTable(cases);
