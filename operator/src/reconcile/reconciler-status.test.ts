import { appliedChildren } from "../testing/fixtures.ts";
import {
  AGENT,
  type Case,
  deploying,
  deployment,
  NAME,
  POLL,
  REDIS_URL_SECRET,
  r1Deployed,
  reconcileTable,
  redisUp,
  revision,
  rolledOut,
  stalled,
  URL,
} from "./testing/table.ts";

/** Reconcile table: rollouts reported as revision and deployment status. */

const cases: Case[] = [
  {
    name: "rollout complete: revision DEPLOYED, the deployment names it ready with its URL",
    objects: [
      deployment({}, {}, { latestCreatedRevision: "r1", deploymentStatus: "READY", readyReplicas: 0 }),
      revision("r1", 10, "DEPLOYING"),
      ...appliedChildren(deployment(), revision("r1", 10), { Deployment: rolledOut, StatefulSet: redisUp }),
    ],
    writes: [`status AgentDeployment ${NAME}`, "status AgentRevision r1"],
    status: r1Deployed(),
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
      status: r1Deployed(URL, [`Autoscaling=False FailedGetResourceMetric: ${noMetrics}`]),
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
    status: r1Deployed("http://203.0.113.7:8000"),
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
];

reconcileTable(cases);
