import { CLEANUP_FINALIZER } from "@agentplane/crds";
import { appliedChildren } from "../testing/fixtures.ts";
import {
  AGENT,
  type Case,
  deploying,
  deployment,
  NAME,
  POLL,
  REDIS,
  REDIS_URL_SECRET,
  r1Deployed,
  reconcileTable,
  redisUp,
  revision,
  rolledOut,
} from "./testing/table.ts";

/** Reconcile table: what is applied, created once and deleted, and the finalizer. */

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
    status: r1Deployed(),
    requeue: undefined,
  },
];

reconcileTable(cases);
