import { FOREGROUND_FINALIZER, type KubeApi, type PropagationPolicy } from "./api.ts";
import { apiVersionOf, type ResourceType } from "./resources.ts";
import type { KubeObject, OwnerReference, StoreEvent } from "./store.ts";

/**
 * The garbage collector and namespace controller: reacts to store events after the request that
 * caused them has been answered, like the controllers of a real control plane.
 * - an owner removed → its dependents are deleted (cascading), or lose the dangling reference
 *   when another owner remains;
 * - an owner in foreground deletion → dependents deleted first, then its finalizer dropped;
 * - a dependent whose owners do not exist (uid mismatch) → deleted;
 * - a terminating namespace → emptied, then removed.
 */
export class GarbageCollector {
  private readonly api: KubeApi;
  private pending: StoreEvent[] = [];
  private scheduled = false;
  private readonly unsubscribe: () => void;

  constructor(api: KubeApi) {
    this.api = api;
    this.unsubscribe = api.store.subscribe((event) => this.enqueue(event));
  }

  stop(): void {
    this.unsubscribe();
  }

  private enqueue(event: StoreEvent): void {
    this.pending.push(event);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.drain());
  }

  private drain(): void {
    this.scheduled = false;
    const events = this.pending;
    this.pending = [];
    for (const event of events) {
      try {
        this.handle(event);
      } catch {
        // The object changed or vanished meanwhile; the event that did it is queued too.
      }
    }
  }

  private handle({ type, resource, object }: StoreEvent): void {
    const { metadata } = object;
    const isNamespace = resource.plural === "namespaces" && resource.group === "";
    if (type === "DELETED") {
      this.collectDependents(object, "Background");
      for (const reference of metadata.ownerReferences ?? []) {
        const owner = this.findOwner(reference, metadata.namespace);
        if (owner) this.finishForeground(owner.resource, owner.object);
      }
      if (metadata.namespace) this.finishNamespace(metadata.namespace);
      return;
    }
    const current = this.api.store.get(resource, metadata.namespace, metadata.name);
    if (!current || current.metadata.resourceVersion !== metadata.resourceVersion) return;
    if (current.metadata.deletionTimestamp && current.metadata.finalizers?.includes(FOREGROUND_FINALIZER)) {
      this.collectDependents(current, "Foreground");
      this.finishForeground(resource, current);
    }
    if (isNamespace && current.metadata.deletionTimestamp) {
      this.emptyNamespace(current.metadata.name);
      this.finishNamespace(current.metadata.name);
    }
    const references = current.metadata.ownerReferences ?? [];
    if (references.length > 0 && references.every((r) => this.ownerAbsent(r, current.metadata.namespace))) {
      this.api.delete(resource, current.metadata.namespace, current.metadata.name, { propagationPolicy: "Background" });
    }
  }

  private collectDependents(owner: KubeObject, policy: PropagationPolicy): void {
    for (const { resource, object } of this.dependentsOf(owner)) {
      const remaining = (object.metadata.ownerReferences ?? []).filter(
        (r) => r.uid !== owner.metadata.uid && !this.ownerAbsent(r, object.metadata.namespace),
      );
      const ownerGone = !this.api.store.get(this.resourceOf(owner), owner.metadata.namespace, owner.metadata.name);
      if (remaining.length > 0 && ownerGone) {
        const next = structuredClone(object);
        next.metadata.ownerReferences = remaining;
        this.api.store.write(resource, "MODIFIED", next, object);
      } else if (remaining.length === 0 && !object.metadata.deletionTimestamp) {
        this.api.delete(resource, object.metadata.namespace, object.metadata.name, { propagationPolicy: policy });
      }
    }
  }

  private finishForeground(resource: ResourceType, owner: KubeObject): void {
    const current = this.api.store.get(resource, owner.metadata.namespace, owner.metadata.name);
    if (!current?.metadata.deletionTimestamp || !current.metadata.finalizers?.includes(FOREGROUND_FINALIZER)) return;
    const blocking = this.dependentsOf(current).some(({ object }) =>
      object.metadata.ownerReferences?.some((r) => r.uid === current.metadata.uid && r.blockOwnerDeletion),
    );
    if (blocking) return;
    const next = structuredClone(current);
    next.metadata.finalizers = current.metadata.finalizers.filter((f) => f !== FOREGROUND_FINALIZER);
    if (next.metadata.finalizers.length === 0) this.api.remove(resource, next);
    else this.api.store.write(resource, "MODIFIED", next, current);
  }

  private emptyNamespace(namespace: string): void {
    for (const resource of this.api.registry.all().filter((r) => r.namespaced)) {
      for (const object of [...this.api.store.list(resource, namespace)]) {
        if (!object.metadata.deletionTimestamp) this.api.delete(resource, namespace, object.metadata.name);
      }
    }
  }

  private finishNamespace(name: string): void {
    const namespaces = this.api.resource("v1", "namespaces");
    const namespace = this.api.store.get(namespaces, undefined, name);
    if (!namespace?.metadata.deletionTimestamp) return;
    const empty = this.api.registry
      .all()
      .filter((r) => r.namespaced)
      .every((r) => this.api.store.list(r, name).length === 0);
    if (empty && (namespace.metadata.finalizers ?? []).length === 0) this.api.remove(namespaces, namespace);
  }

  private dependentsOf(owner: KubeObject): { resource: ResourceType; object: KubeObject }[] {
    return this.api.registry.all().flatMap((resource) =>
      this.api.store
        .list(resource, owner.metadata.namespace)
        .filter((object) => object.metadata.ownerReferences?.some((r) => r.uid === owner.metadata.uid))
        .map((object) => ({ resource, object: structuredClone(object) })),
    );
  }

  private resourceOf(object: KubeObject): ResourceType {
    const found = this.api.registry.all().find((r) => apiVersionOf(r) === object.apiVersion && r.kind === object.kind);
    if (!found) throw new Error(`unknown kind ${object.apiVersion} ${object.kind}`);
    return found;
  }

  private findOwner(reference: OwnerReference, namespace: string | undefined) {
    const resource = this.api.registry
      .all()
      .find((r) => apiVersionOf(r) === reference.apiVersion && r.kind === reference.kind);
    if (!resource) return undefined;
    const object = this.api.store.get(resource, resource.namespaced ? namespace : undefined, reference.name);
    return object && object.metadata.uid === reference.uid ? { resource, object } : undefined;
  }

  /** Absent = a known kind with no object of that name and uid; owners of unknown kinds count as present. */
  private ownerAbsent(reference: OwnerReference, namespace: string | undefined): boolean {
    const known = this.api.registry
      .all()
      .some((r) => apiVersionOf(r) === reference.apiVersion && r.kind === reference.kind);
    return known && this.findOwner(reference, namespace) === undefined;
  }
}
