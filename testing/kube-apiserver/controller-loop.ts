import { randomBytes } from "node:crypto";
import type { KubeApi } from "./api.ts";
import { timestamp } from "./object-shape.ts";
import { typeKey } from "./resources.ts";
import type { KubeObject } from "./store.ts";

/**
 * Runs `sync(namespace)` once per namespace touched by a change to one of `kinds` (`<group>/<plural>`),
 * after the request that made the change has been answered, as kube-controller-manager's controllers
 * react to their informers. Returns the function that stops it.
 */
export function onNamespaceChanges(api: KubeApi, kinds: string[], sync: (namespace: string) => void): () => void {
  const watched = new Set(kinds);
  const pending = new Set<string>();
  let scheduled = false;
  return api.store.subscribe((event) => {
    const namespace = event.object.metadata.namespace;
    if (!namespace || !watched.has(typeKey(event.resource))) return;
    pending.add(namespace);
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      const namespaces = [...pending];
      pending.clear();
      for (const name of namespaces) {
        try {
          sync(name);
        } catch {
          // The objects changed or vanished meanwhile; the change that did it brings us back.
        }
      }
    });
  });
}

/** What an Event names of the object it is about. */
interface EventSubject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

/**
 * A core/v1 Event about `object`, as client-go's event recorder writes it for a controller. The
 * test server's controllers write it in process; the test kubelet's, through the API.
 */
export function controllerEvent(
  object: EventSubject,
  type: "Normal" | "Warning",
  reason: string,
  message: string,
  component: string,
): Record<string, unknown> {
  const now = timestamp();
  const { name, namespace, uid, resourceVersion } = object.metadata ?? {};
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: `${name}.${randomBytes(8).toString("hex")}`, namespace },
    involvedObject: { apiVersion: object.apiVersion, kind: object.kind, name, namespace, uid, resourceVersion },
    type,
    reason,
    message,
    source: { component },
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
    reportingComponent: component,
  };
}

/** Records `controllerEvent(...)` through the test server's own API. */
export function recordEvent(
  api: KubeApi,
  object: KubeObject,
  type: "Normal" | "Warning",
  reason: string,
  message: string,
  component: string,
): void {
  api.create(
    api.resource("v1", "events"),
    object.metadata.namespace,
    controllerEvent(object, type, reason, message, component),
  );
}
