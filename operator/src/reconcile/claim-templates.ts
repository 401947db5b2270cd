import type { KubeObject } from "../kube/client.ts";
import type { ClaimTemplate, LiveStatefulSet } from "./caches.ts";

interface RenderedStatefulSet extends KubeObject {
  spec: { volumeClaimTemplates?: ClaimTemplate[] };
}

/**
 * Kubernetes refuses any change to a StatefulSet's `volumeClaimTemplates`, and the claims already
 * made would not follow anyway. When the operator's Redis storage settings changed since the
 * StatefulSet was created, the rendered one keeps the live class and size (so the rest of the
 * update goes through) and `kept` says, per claim, what was asked and not applied; docs/operator.md
 * ("Changing the Redis storage") gives the upgrade path.
 */
export function keepLiveClaimTemplates(
  rendered: KubeObject,
  live: LiveStatefulSet | undefined,
): { body: KubeObject; kept: string[] } {
  const liveTemplates = live?.spec?.volumeClaimTemplates;
  if (!liveTemplates) return { body: rendered, kept: [] };
  const body = structuredClone(rendered) as RenderedStatefulSet;
  const kept: string[] = [];
  for (const template of body.spec.volumeClaimTemplates ?? []) {
    const current = liveTemplates.find((t) => t.metadata?.name === template.metadata?.name);
    if (!current || !template.spec) continue;
    const name = template.metadata?.name;
    const [size, liveSize] = [template.spec.resources?.requests?.storage, current.spec?.resources?.requests?.storage];
    const [storageClass, liveClass] = [template.spec.storageClassName, current.spec?.storageClassName];
    if (size !== liveSize) {
      kept.push(`${name}: size ${liveSize ?? "unset"} kept, ${size ?? "unset"} not applied`);
      template.spec.resources = { ...template.spec.resources, requests: { storage: liveSize } };
    }
    if (storageClass !== liveClass) {
      kept.push(`${name}: storage class ${liveClass ?? "(default)"} kept, ${storageClass ?? "(default)"} not applied`);
      if (liveClass === undefined) delete template.spec.storageClassName;
      else template.spec.storageClassName = liveClass;
    }
  }
  return { body: kept.length > 0 ? body : rendered, kept };
}
