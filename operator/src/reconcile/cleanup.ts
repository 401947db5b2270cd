import { type AgentDeployment, CLEANUP_FINALIZER } from "@agentplane/crds";
import { intentHash } from "../build/children.ts";
import { agentName, COMPONENT_LABEL, FIELD_MANAGER, INSTANCE_LABEL, nameOf, redisName } from "../build/names.ts";
import type { KubeObject } from "../kube/client.ts";
import { resourcePath, resources } from "../kube/resources.ts";
import { deletingStatus } from "../status/deployment.ts";
import type { ReconcilerDeps } from "./reconciler.ts";

/**
 * The finalizer's work. Owner references would let the garbage collector remove the children, but
 * not the Redis PersistentVolumeClaims (they belong to the StatefulSet's claim template, not to us)
 * and not before the AgentDeployment is gone — the control plane must see AWAITING_DELETE until
 * everything is removed. Returns true once the finalizer is released.
 */
export async function cleanUp(agd: AgentDeployment, deps: ReconcilerDeps): Promise<boolean> {
  if (!agd.metadata.finalizers?.includes(CLEANUP_FINALIZER)) return true;
  const { kube, events } = deps;
  const namespace = agd.metadata.namespace as string;
  const name = nameOf(agd);
  const agdPath = resourcePath(resources.agentDeployment, namespace, name);
  const status = deletingStatus(agd, deps.now());
  let resourceVersion = agd.metadata.resourceVersion;
  if (!agd.status || intentHash(agd.status) !== intentHash(status)) {
    const written = await kube.mergePatch<KubeObject>(`${agdPath}/status`, { status }, FIELD_MANAGER);
    resourceVersion = written.metadata?.resourceVersion;
    events.record(agd, "Normal", "Deleting", "Delete", "Removing the agent server, its Service and Redis");
  }
  const children = [
    resourcePath(resources.hpa, namespace, agentName(agd)),
    resourcePath(resources.deployment, namespace, agentName(agd)),
    resourcePath(resources.service, namespace, agentName(agd)),
    resourcePath(resources.statefulSet, namespace, redisName(agd)),
    resourcePath(resources.service, namespace, redisName(agd)),
    resourcePath(resources.secret, namespace, redisName(agd)),
    resourcePath(resources.networkPolicy, namespace, agentName(agd)),
    resourcePath(resources.networkPolicy, namespace, redisName(agd)),
  ];
  const claims = await kube.list<KubeObject>(
    resourcePath(resources.persistentVolumeClaim, namespace),
    `${INSTANCE_LABEL}=${name},${COMPONENT_LABEL}=redis`,
  );
  for (const claim of claims.items) {
    children.push(resourcePath(resources.persistentVolumeClaim, namespace, claim.metadata?.name));
  }
  await Promise.all(children.map((path) => kube.delete(path)));
  const remaining = await Promise.all(children.map((path) => kube.get(path)));
  if (remaining.some((obj) => obj !== undefined)) return false;

  const finalizers = agd.metadata.finalizers.filter((f) => f !== CLEANUP_FINALIZER);
  await kube.jsonPatch(
    agdPath,
    [
      { op: "test", path: "/metadata/resourceVersion", value: resourceVersion },
      { op: "replace", path: "/metadata/finalizers", value: finalizers },
    ],
    FIELD_MANAGER,
  );
  deps.log.info({ deployment: name, namespace }, "cleaned up; finalizer released");
  return true;
}
