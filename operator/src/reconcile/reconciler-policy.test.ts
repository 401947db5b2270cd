import { CLEANUP_FINALIZER } from "@agentplane/crds";
import { expect } from "vitest";
import { resources } from "../kube/resources.ts";
import { appliedChildren } from "../testing/fixtures.ts";
import {
  AGENT,
  type Case,
  deploying,
  deployment,
  NAME,
  POLL,
  reconcileTable,
  redisUp,
  revision,
  rolledOut,
  URL,
} from "./testing/table.ts";

/** Reconcile table: specs the pod policy refuses, and foreign objects shared with the workspace. */

const HOST_PATH_REFUSED =
  "AgentRevision spec.template.resources.volumes[0].hostPath: hostPath volumes are not allowed (configMap, secret, emptyDir, projected, downwardAPI)";

const cases: Case[] = [
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
];

reconcileTable(cases);
