import type { AgentDeployment, AgentRevision } from "@agentplane/crds";
import { type DesiredChildren, desiredChildren } from "../build/children.ts";
import { agentName, FIELD_MANAGER, SPEC_HASH_ANNOTATION } from "../build/names.ts";
import { isConflict, KubeApiError, type KubeObject } from "../kube/client.ts";
import { resourcePath, resourceTypeOf } from "../kube/resources.ts";
import type { LiveDeployment, PodFailure } from "../status/rollout.ts";
import { childCache } from "./caches.ts";
import { keepLiveClaimTemplates } from "./claim-templates.ts";
import type { ReconcilerDeps } from "./reconciler.ts";
import { stillPending, type WriteMemo } from "./write-memo.ts";

/** How long a create-once child seen to exist is trusted to still exist (it has no informer). */
const CREATED_RECHECK_MS = 5 * 60_000;

/**
 * Answers that refuse the object itself, so sending it again cannot help: 422 Invalid (validation,
 * immutable fields) and 400 (it cannot be decoded). A 403 is left to retry: RBAC can be fixed.
 */
function isRefusal(error: unknown): error is KubeApiError {
  return error instanceof KubeApiError && (error.code === 422 || error.code === 400);
}

/** Creates each create-once child that does not exist yet (never rewriting one that does). */
async function createMissing(
  deps: ReconcilerDeps,
  memo: WriteMemo,
  agd: AgentDeployment,
  children: DesiredChildren["createOnce"],
): Promise<void> {
  const { kube, events } = deps;
  const namespace = agd.metadata.namespace as string;
  const writes = memo.writes(agd);
  await Promise.all(
    children.map(async (child) => {
      const key = `${child.kind}/${child.name}`;
      const seen = writes.get(key);
      if (seen?.hash === "exists" && Date.now() - seen.at < CREATED_RECHECK_MS) return;
      const type = resourceTypeOf(child);
      if (!(await kube.get(resourcePath(type, namespace, child.name)))) {
        try {
          await kube.create(resourcePath(type, namespace), child.build());
          events.record(agd, "Normal", "Created", "Apply", `Created ${child.kind} ${child.name}`);
        } catch (error) {
          if (!isConflict(error)) throw error; // AlreadyExists: created meanwhile, keep it
        }
      }
      writes.set(key, { hash: "exists", basedOn: undefined, at: Date.now() });
    }),
  );
}

/**
 * Applies every child whose intent changed (in parallel: they are independent objects) and deletes
 * those that must not exist; returns the agent Deployment as the API server last showed it.
 */
export async function applyChildren(
  deps: ReconcilerDeps,
  memo: WriteMemo,
  agd: AgentDeployment,
  active: AgentRevision,
): Promise<{ deployment: LiveDeployment | undefined; refused: PodFailure | undefined }> {
  const { kube, caches, metrics, events } = deps;
  const namespace = agd.metadata.namespace as string;
  const desired = desiredChildren(agd, active, deps.settings);
  await createMissing(deps, memo, agd, desired.createOnce);
  const applied = memo.writes(agd);
  const rejected = memo.rejections(agd);
  let deployment = caches.deployments.get(agentName(agd), namespace);
  const apply = async (child: KubeObject) => {
    const childName = child.metadata?.name as string;
    const key = `${child.kind}/${childName}`;
    const hash = child.metadata?.annotations?.[SPEC_HASH_ANNOTATION] as string;
    const live = childCache(caches, child.kind).get(childName, namespace);
    const liveHash = live?.metadata?.annotations?.[SPEC_HASH_ANNOTATION];
    if (rejected.get(key)?.hash === hash) return;
    rejected.delete(key);
    if (liveHash === hash || stillPending(applied.get(key), hash, live)) return;
    const { body, kept } =
      child.kind === "StatefulSet" ? keepLiveClaimTemplates(child, live) : { body: child, kept: [] };
    let result: KubeObject;
    try {
      result = await kube.apply<KubeObject>(
        resourcePath(resourceTypeOf(child), namespace, childName),
        body,
        FIELD_MANAGER,
      );
    } catch (error) {
      if (!isRefusal(error)) throw error;
      // Kubernetes refused the object as rendered: the revision fails with the server's words
      // instead of retrying the same write forever.
      const message = `Kubernetes refused ${child.kind} ${childName}: ${error.message}`;
      rejected.set(key, { hash, message });
      deps.log.warn({ kind: child.kind, name: childName, err: error }, "the API server refused a child");
      events.record(agd, "Warning", "ObjectRejected", "Apply", message);
      return;
    }
    applied.set(key, { hash, basedOn: live?.metadata?.resourceVersion, at: Date.now() });
    metrics.applies.inc({ kind: child.kind });
    if (child.kind === "Deployment") deployment = result;
    const verb = live ? "Updated" : "Created";
    events.record(agd, "Normal", verb, "Apply", `${verb} ${child.kind} ${childName}`);
    if (kept.length > 0) {
      const note = `${child.kind} ${childName} keeps its volume claim templates, which Kubernetes never changes (${kept.join("; ")}); see "Changing the Redis storage" in the operator docs`;
      events.record(agd, "Warning", "StorageUnchanged", "Apply", note);
    }
  };
  const remove = async (gone: DesiredChildren["absent"][number]) => {
    const live = await liveChild(deps, memo, agd, gone);
    if (!live?.metadata?.ownerReferences?.some((o) => o.uid === agd.metadata.uid)) return;
    await kube.delete(resourcePath(resourceTypeOf(gone), namespace, gone.name));
    applied.delete(`${gone.kind}/${gone.name}`);
    events.record(agd, "Normal", "Deleted", "Delete", `Deleted ${gone.kind} ${gone.name}`);
  };
  await Promise.all([...desired.apply.map(apply), ...desired.absent.map(remove)]);
  const wanted = new Set(desired.apply.map((child) => `${child.kind}/${child.metadata?.name}`));
  for (const key of rejected.keys()) if (!wanted.has(key)) rejected.delete(key);
  const [first] = rejected.values();
  return {
    deployment,
    refused: first && { reason: "ObjectRejected", message: [...rejected.values()].map((r) => r.message).join("; ") },
  };
}

/**
 * A child as last seen: from its informer cache, or (Secrets, which the operator does not watch)
 * from the API server, at most once per recheck period while it stays absent.
 */
async function liveChild(
  deps: ReconcilerDeps,
  memo: WriteMemo,
  agd: AgentDeployment,
  child: DesiredChildren["absent"][number],
) {
  const namespace = agd.metadata.namespace as string;
  if (child.kind !== "Secret") return childCache(deps.caches, child.kind).get(child.name, namespace);
  const writes = memo.writes(agd);
  const key = `${child.kind}/${child.name}`;
  const seen = writes.get(key);
  if (seen?.hash === "absent" && Date.now() - seen.at < CREATED_RECHECK_MS) return undefined;
  const live = await deps.kube.get<KubeObject>(resourcePath(resourceTypeOf(child), namespace, child.name));
  writes.set(key, { hash: live ? "exists" : "absent", basedOn: undefined, at: Date.now() });
  return live;
}
