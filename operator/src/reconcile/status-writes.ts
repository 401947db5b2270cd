import type { AgentDeployment, AgentRevision } from "@agentplane/crds";
import { intentHash } from "../build/children.ts";
import { FIELD_MANAGER, nameOf } from "../build/names.ts";
import type { KubeObject } from "../kube/client.ts";
import { resourcePath, resourceTypeOf } from "../kube/resources.ts";
import { agentDeploymentStatus } from "../status/deployment.ts";
import { type RevisionOutcome, revisionStatusFor } from "../status/revisions.ts";
import type { ReconcilerDeps } from "./reconciler.ts";
import { stillPending, type WriteMemo } from "./write-memo.ts";

/** Writes `status` to the status subresource unless the cache or our last write already shows it. */
async function writeStatus(
  deps: ReconcilerDeps,
  memo: WriteMemo,
  agd: AgentDeployment,
  obj: KubeObject & { status?: unknown },
  status: unknown,
): Promise<boolean> {
  const hash = intentHash(status);
  const memoKey = `${obj.kind}/${obj.metadata?.name}/status`;
  const writes = memo.writes(agd);
  if ((obj.status && intentHash(obj.status) === hash) || stillPending(writes.get(memoKey), hash, obj)) return false;
  await deps.kube.mergePatch(
    `${resourcePath(resourceTypeOf(obj), obj.metadata?.namespace, obj.metadata?.name)}/status`,
    { status },
    FIELD_MANAGER,
  );
  writes.set(memoKey, { hash, basedOn: obj.metadata?.resourceVersion, at: Date.now() });
  deps.metrics.statusWrites.inc({ kind: obj.kind });
  return true;
}

export async function writeRevisionStatus(
  deps: ReconcilerDeps,
  memo: WriteMemo,
  agd: AgentDeployment,
  revision: AgentRevision,
  outcome: RevisionOutcome,
  readyReplicas: number,
): Promise<void> {
  const status = revisionStatusFor(revision, outcome, readyReplicas, deps.now());
  const wrote = await writeStatus(deps, memo, agd, revision, status);
  if (wrote && revision.status?.revisionStatus !== outcome.revisionStatus) {
    const warning = outcome.revisionStatus === "DEPLOY_FAILED";
    const note = `Revision ${nameOf(revision)} is ${outcome.revisionStatus}${outcome.message ? `: ${outcome.message}` : ""}`;
    deps.log.info({ revision: nameOf(revision), status: outcome.revisionStatus }, "revision status changed");
    deps.events.record(agd, warning ? "Warning" : "Normal", outcome.reason, "Rollout", note);
  }
}

export async function writeDeploymentStatus(
  deps: ReconcilerDeps,
  memo: WriteMemo,
  agd: AgentDeployment,
  seen: Parameters<typeof agentDeploymentStatus>[1],
): Promise<void> {
  await writeStatus(deps, memo, agd, agd, agentDeploymentStatus(agd, seen, deps.now()));
}
