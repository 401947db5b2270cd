import { type ResourceType, typeKey } from "./resources.ts";

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ManagedFieldsEntry {
  manager: string;
  operation: "Apply" | "Update";
  apiVersion: string;
  time: string;
  fieldsType: "FieldsV1";
  fieldsV1: Record<string, unknown>;
  subresource?: string;
}

export interface ObjectMeta {
  name: string;
  generateName?: string;
  namespace?: string;
  uid: string;
  resourceVersion: string;
  generation?: number;
  creationTimestamp: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  managedFields?: ManagedFieldsEntry[];
}

/** A stored object: JSON as the API serves it. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export type EventType = "ADDED" | "MODIFIED" | "DELETED";

export interface StoreEvent {
  type: EventType;
  resource: ResourceType;
  object: KubeObject;
  /** The object before a MODIFIED event (watch selectors need it). */
  previous?: KubeObject;
  resourceVersion: number;
}

/**
 * All objects plus a bounded history of changes for watches. Every write takes the next value
 * of one global counter as its resourceVersion, like etcd's revision.
 */
export class ObjectStore {
  private revision = 0;
  private readonly buckets = new Map<string, Map<string, KubeObject>>();
  private history: StoreEvent[] = [];
  private readonly listeners = new Set<(event: StoreEvent) => void>();
  private readonly retainedEvents: number;

  constructor(retainedEvents: number) {
    this.retainedEvents = retainedEvents;
  }

  get resourceVersion(): number {
    return this.revision;
  }

  /** Watches may resume from any resourceVersion at or after this one. */
  get oldestResumableVersion(): number {
    return this.history.length > 0 ? (this.history[0]?.resourceVersion ?? 0) - 1 : this.revision;
  }

  get(resource: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    const object = this.buckets.get(typeKey(resource))?.get(`${namespace ?? ""}/${name}`);
    return object && structuredClone(object);
  }

  /** Stored objects, not copies: callers must not mutate them. */
  list(resource: ResourceType, namespace?: string): KubeObject[] {
    const objects = [...(this.buckets.get(typeKey(resource))?.values() ?? [])];
    return namespace === undefined ? objects : objects.filter((o) => o.metadata.namespace === namespace);
  }

  /** Stores (or, for DELETED, removes) the object under a new resourceVersion and notifies watchers. */
  write(resource: ResourceType, type: EventType, object: KubeObject, previous?: KubeObject): KubeObject {
    this.revision += 1;
    const stored = structuredClone(object);
    stored.metadata.resourceVersion = String(this.revision);
    const key = typeKey(resource);
    const bucket = this.buckets.get(key) ?? new Map<string, KubeObject>();
    this.buckets.set(key, bucket);
    const id = `${stored.metadata.namespace ?? ""}/${stored.metadata.name}`;
    if (type === "DELETED") bucket.delete(id);
    else bucket.set(id, stored);
    const event: StoreEvent = { type, resource, object: stored, resourceVersion: this.revision };
    if (previous) event.previous = previous;
    this.history.push(event);
    if (this.history.length > this.retainedEvents) this.history.shift();
    for (const listener of this.listeners) listener(event);
    return structuredClone(stored);
  }

  /** Events after `resourceVersion`, oldest first. */
  eventsSince(resourceVersion: number): StoreEvent[] {
    return this.history.filter((event) => event.resourceVersion > resourceVersion);
  }

  /** Forgets the change history, so watches from an older resourceVersion get 410 Gone. */
  compact(): void {
    this.history = [];
  }

  subscribe(listener: (event: StoreEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
