import {
  type AgentDeployment,
  type AgentRevision,
  CLEANUP_FINALIZER,
  type Condition,
  type RevisionStatus,
} from "@agentplane/crds";
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../kube/client.ts";
import { agentDeployment, agentRevision } from "../../testing/fixtures.ts";
import { type RecordedWrite, type RecordingCluster, recordingCluster } from "../../testing/recording-cluster.ts";

/**
 * Table test of one reconcile (after Knative Serving's TableTest): the objects the cluster and the
 * informer caches hold before, then every write the reconciler sends, the statuses it writes, the
 * events it records and when it asks to look again; then a second reconcile once the caches caught
 * up. Expected values characterise today's behaviour (read from running it, not from a spec).
 */
export interface Case {
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

export const NAME = "demo";
const KEY = `agents/${NAME}`;
export const AGENT = `agent-${NAME}`;
export const REDIS = `${AGENT}-redis`;
/** An external Redis URL in a Secret of the deployment's own (`<id>-…`, the pod policy's rule). */
export const REDIS_URL_SECRET = `${NAME}-redis-url`;
export const POLL = 2000;
export const URL = `http://${AGENT}.agents.svc.cluster.local:8000`;

export const second = (s: number) => `2026-01-01T00:00:${String(s).padStart(2, "0")}Z`;

export function deployment(
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
export function revision(
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

export const rolledOut = {
  observedGeneration: 1,
  replicas: 1,
  updatedReplicas: 1,
  readyReplicas: 1,
  availableReplicas: 1,
};
export const stalled = {
  observedGeneration: 1,
  replicas: 1,
  updatedReplicas: 1,
  readyReplicas: 0,
  availableReplicas: 0,
};
export const redisUp = { readyReplicas: 1 };

export const deploying = (rev: string) => [
  `Ready=Unknown Deploying: rolling out revision ${rev}`,
  `Progressing=True Deploying: rolling out revision ${rev}`,
  "Degraded=False AsExpected",
];

/**
 * The statuses written once revision r1 has rolled out with one replica: the deployment READY
 * at `url`, naming r1 ready, and r1 DEPLOYED; `conditions` are the deployment's beyond the three.
 */
export const r1Deployed = (url = URL, conditions: string[] = []) => ({
  [NAME]: {
    observedGeneration: 1,
    latestCreatedRevision: "r1",
    latestReadyRevision: "r1",
    url,
    readyReplicas: 1,
    deploymentStatus: "READY",
    conditions: [
      "Ready=True RevisionReady: 1 of 1 replicas available",
      "Progressing=False RolloutComplete: 1 of 1 replicas available",
      "Degraded=False AsExpected",
      ...conditions,
    ],
  },
  r1: {
    observedGeneration: 1,
    revisionStatus: "DEPLOYED",
    message: "",
    readyReplicas: 1,
    conditions: ["Ready=True RolloutComplete"],
  },
});

/** Runs each case as one test: a reconcile, its writes, statuses, events and requeue, then a second one. */
export function reconcileTable(cases: Case[]): void {
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
}

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
