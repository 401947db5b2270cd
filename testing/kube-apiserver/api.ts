import { isDeepStrictEqual } from "node:util";
import { admit, applyDefaults, checkKind, forbidden } from "./admission.ts";
import { checkOwnerReferences, type UserAuthorizer } from "./authorization.ts";
import { alreadyExists, badRequest, conflict, invalid, KubeError, notFound, STALE_OBJECT } from "./errors.ts";
import { FieldManager, type Subresource } from "./managed-fields.ts";
import { newObject, scopeWrite, specOf, timestamp } from "./object-shape.ts";
import { isObject, jsonPatch, mergePatch, strategicMergePatch } from "./patch.ts";
import { admitPod } from "./pod-admission.ts";
import { apiVersionOf, type ResourceRegistry, type ResourceType } from "./resources.ts";
import type { KubeObject, ObjectStore } from "./store.ts";

export interface WriteOptions {
  fieldManager?: string;
  dryRun?: boolean;
  /** fieldValidation=Strict: unknown fields are an error instead of being pruned. */
  strict?: boolean;
  subresource?: Subresource;
  force?: boolean;
  /**
   * The requesting user's authorizer, when the server emulates authorization: admission checks that
   * depend on who asks (owner-reference permissions) run only then.
   */
  authorize?: UserAuthorizer;
}

export type PropagationPolicy = "Background" | "Foreground" | "Orphan";

export interface DeleteOptions {
  propagationPolicy?: PropagationPolicy;
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: boolean;
}

export const PATCH_TYPES = {
  json: "application/json-patch+json",
  merge: "application/merge-patch+json",
  strategic: "application/strategic-merge-patch+json",
  apply: "application/apply-patch+yaml",
} as const;

export const FOREGROUND_FINALIZER = "foregroundDeletion";

/** The apiserver's object semantics (validation, versions, generation, status, finalizers) over the store. */
export class KubeApi {
  readonly registry: ResourceRegistry;
  readonly store: ObjectStore;
  readonly fields = new FieldManager();

  constructor(registry: ResourceRegistry, store: ObjectStore) {
    this.registry = registry;
    this.store = store;
  }

  resource(apiVersion: string, plural: string): ResourceType {
    const resource = this.registry.find(apiVersion, plural);
    if (!resource) throw new KubeError(404, "NotFound", "the server could not find the requested resource");
    return resource;
  }

  get(resource: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const object = this.store.get(resource, namespace, name);
    if (!object) throw notFound(resource, name);
    return object;
  }

  create(resource: ResourceType, namespace: string | undefined, body: unknown, options: WriteOptions = {}): KubeObject {
    const object = this.prepareCreate(resource, namespace, body);
    applyDefaults(resource, object);
    this.admitWrite(resource, object, undefined, options);
    const ownership = this.fields.recordUpdate(resource, undefined, object, options.fieldManager ?? "unknown", "");
    return this.insert(resource, object, ownership, options);
  }

  update(
    resource: ResourceType,
    namespace: string | undefined,
    name: string,
    body: unknown,
    options: WriteOptions = {},
  ) {
    const current = this.get(resource, namespace, name);
    if (!isObject(body) || !isObject(body.metadata)) throw badRequest("Object 'metadata' is missing");
    const expected = body.metadata.resourceVersion;
    if ((expected === undefined || expected === "") && resource.schema) {
      // Custom resources do not allow unconditional updates (AllowUnconditionalUpdate is false for them).
      throw invalid(resource, name, [
        {
          field: "metadata.resourceVersion",
          reason: "FieldValueInvalid",
          message: "Invalid value: 0x0: must be specified for an update",
        },
      ]);
    }
    if (expected !== undefined && expected !== "" && expected !== current.metadata.resourceVersion) {
      throw conflict(resource, name, STALE_OBJECT);
    }
    return this.replace(resource, current, body, options);
  }

  patch(
    resource: ResourceType,
    namespace: string | undefined,
    name: string,
    contentType: string,
    patch: unknown,
    options: WriteOptions = {},
  ): KubeObject {
    if (contentType === PATCH_TYPES.apply) return this.apply(resource, namespace, name, patch, options);
    const current = this.get(resource, namespace, name);
    let patched: unknown;
    if (contentType === PATCH_TYPES.merge) patched = mergePatch(current, patch);
    else if (contentType === PATCH_TYPES.json) patched = jsonPatch(current, patch);
    else if (contentType === PATCH_TYPES.strategic && !resource.schema) patched = strategicMergePatch(current, patch);
    else throw unsupportedPatch(contentType);
    if (!isObject(patched) || !isObject(patched.metadata)) throw badRequest("the patch removed metadata");
    const expected = patched.metadata.resourceVersion;
    if (expected !== undefined && expected !== "" && expected !== current.metadata.resourceVersion) {
      throw conflict(resource, name, STALE_OBJECT);
    }
    return this.replace(resource, current, patched, options);
  }

  delete(
    resource: ResourceType,
    namespace: string | undefined,
    name: string,
    options: DeleteOptions = {},
  ): { object: KubeObject; removed: boolean } {
    const current = this.get(resource, namespace, name);
    const { uid, resourceVersion } = options.preconditions ?? {};
    if (uid && uid !== current.metadata.uid) {
      throw conflict(
        resource,
        name,
        `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    if (resourceVersion && resourceVersion !== current.metadata.resourceVersion) {
      throw conflict(resource, name, STALE_OBJECT);
    }
    if (options.dryRun) return { object: current, removed: false };
    if (options.propagationPolicy === "Orphan") this.orphanDependents(current);
    const finalizers = [...(current.metadata.finalizers ?? [])];
    if (options.propagationPolicy === "Foreground" && !finalizers.includes(FOREGROUND_FINALIZER)) {
      finalizers.push(FOREGROUND_FINALIZER);
    }
    // A namespace always terminates first: the garbage collector removes its contents, then the namespace.
    const isNamespace = resource.plural === "namespaces" && resource.group === "";
    if (finalizers.length === 0 && !isNamespace) return { object: this.remove(resource, current), removed: true };
    if (current.metadata.deletionTimestamp && isDeepStrictEqual(finalizers, current.metadata.finalizers)) {
      return { object: current, removed: false };
    }
    const next = structuredClone(current);
    next.metadata.finalizers = finalizers;
    next.metadata.deletionTimestamp ??= timestamp();
    next.metadata.deletionGracePeriodSeconds ??= 0;
    if (isNamespace) next.status = { phase: "Terminating" };
    return { object: this.store.write(resource, "MODIFIED", next, current), removed: false };
  }

  /** Removes the object now (finalizers done); the garbage collector reacts to the DELETED event. */
  remove(resource: ResourceType, current: KubeObject): KubeObject {
    this.fields.forget(current.metadata.uid);
    return this.store.write(resource, "DELETED", current, current);
  }

  private apply(
    resource: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    options: WriteOptions,
  ) {
    if (!options.fieldManager) {
      throw badRequest("fieldManager is required for apply requests");
    }
    if (!isObject(patch) || !isObject(patch.metadata)) throw badRequest("Object 'metadata' is missing");
    const bodyNamespace = patch.metadata.namespace;
    if (resource.namespaced && bodyNamespace !== undefined && bodyNamespace !== "" && bodyNamespace !== namespace) {
      throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
    }
    checkKind(resource, patch, apiVersionOf(resource));
    if (patch.metadata.name !== name) {
      throw badRequest(
        `the name of the object (${String(patch.metadata.name)}) does not match the name on the URL (${name})`,
      );
    }
    const subresource = options.subresource ?? "";
    const existing = this.store.get(resource, namespace, name);
    if (!existing && subresource) throw notFound(resource, name);
    if (!existing) {
      const object = this.prepareCreate(resource, namespace, { metadata: { name, namespace } });
      const applied = this.fields.apply(resource, object, patch, options.fieldManager, true, "");
      applyDefaults(resource, applied.object);
      this.admitWrite(resource, applied.object, undefined, options);
      return this.insert(resource, applied.object, applied.ownership, options);
    }
    const { object, ownership } = this.fields.apply(
      resource,
      existing,
      patch,
      options.fieldManager,
      options.force ?? false,
      subresource,
    );
    return this.commit(resource, existing, scopeWrite(resource, existing, object, subresource), ownership, options);
  }

  /** Validation, then the admission plugins a real cluster runs on the write. */
  private admitWrite(resource: ResourceType, object: KubeObject, old: KubeObject | undefined, options: WriteOptions) {
    admit(resource, object, old, options.strict ?? false);
    if (options.authorize) checkOwnerReferences(this.registry, resource, object, old, options.authorize);
    if (!old && resource.group === "" && resource.plural === "pods") admitPod(this, object);
  }

  private prepareCreate(resource: ResourceType, namespace: string | undefined, body: unknown): KubeObject {
    const object = newObject(resource, namespace, body);
    if (resource.namespaced) this.checkNamespace(namespace ?? "");
    if (this.store.get(resource, namespace, object.metadata.name)) throw alreadyExists(resource, object.metadata.name);
    return object;
  }

  private checkNamespace(namespace: string): void {
    const namespaces = this.resource("v1", "namespaces");
    const found = this.store.get(namespaces, undefined, namespace);
    if (!found) throw notFound(namespaces, namespace);
    if (found.metadata.deletionTimestamp) {
      throw forbidden(`unable to create new content in namespace ${namespace} because it is being terminated`);
    }
  }

  private insert(
    resource: ResourceType,
    object: KubeObject,
    ownership: ReturnType<FieldManager["recordUpdate"]>,
    options: WriteOptions,
  ) {
    if (options.dryRun) return object;
    this.fields.commit(object.metadata.uid, ownership);
    object.metadata.managedFields = this.fields.managedFields(object.metadata.uid);
    return this.store.write(resource, "ADDED", object);
  }

  /** A full replacement (PUT, or a patch already applied): keeps what the endpoint may not change. */
  private replace(resource: ResourceType, current: KubeObject, body: Record<string, unknown>, options: WriteOptions) {
    checkKind(resource, body, apiVersionOf(resource));
    const metadata = body.metadata as Record<string, unknown>;
    if (metadata.name !== undefined && metadata.name !== current.metadata.name) {
      throw badRequest(
        `the name of the object (${String(metadata.name)}) does not match the name on the URL (${current.metadata.name})`,
      );
    }
    const subresource = options.subresource ?? "";
    const next = scopeWrite(resource, current, body as KubeObject, subresource);
    const ownership = this.fields.recordUpdate(resource, current, next, options.fieldManager ?? "unknown", subresource);
    return this.commit(resource, current, next, ownership, options);
  }

  private commit(
    resource: ResourceType,
    current: KubeObject,
    next: KubeObject,
    ownership: ReturnType<FieldManager["recordUpdate"]>,
    options: WriteOptions,
  ): KubeObject {
    if (current.metadata.deletionTimestamp) {
      const added = (next.metadata.finalizers ?? []).filter((f) => !(current.metadata.finalizers ?? []).includes(f));
      if (added.length > 0) {
        throw invalid(resource, current.metadata.name, [
          {
            field: "metadata.finalizers",
            reason: "FieldValueInvalid",
            message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}`,
          },
        ]);
      }
    }
    // Defaults apply to every write: a field dropped by its last manager (say `replicas` under
    // server-side apply) comes back with its default, not empty.
    applyDefaults(resource, next);
    this.admitWrite(resource, next, current, options);
    if (resource.tracksGeneration && !isDeepStrictEqual(specOf(current), specOf(next))) {
      next.metadata.generation = (current.metadata.generation ?? 0) + 1;
    }
    next.metadata.resourceVersion = current.metadata.resourceVersion;
    if (options.dryRun) return next;
    this.fields.commit(current.metadata.uid, ownership);
    next.metadata.managedFields = this.fields.managedFields(current.metadata.uid);
    if (current.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
      return this.remove(resource, next);
    }
    if (isDeepStrictEqual(next, current)) return current;
    return this.store.write(resource, "MODIFIED", next, current);
  }

  private orphanDependents(owner: KubeObject): void {
    for (const resource of this.registry.all()) {
      for (const dependent of this.store.list(resource, owner.metadata.namespace)) {
        const references = dependent.metadata.ownerReferences ?? [];
        if (!references.some((r) => r.uid === owner.metadata.uid)) continue;
        const next = structuredClone(dependent);
        next.metadata.ownerReferences = references.filter((r) => r.uid !== owner.metadata.uid);
        this.store.write(resource, "MODIFIED", next, dependent);
      }
    }
  }
}

function unsupportedPatch(contentType: string): KubeError {
  return new KubeError(
    415,
    "UnsupportedMediaType",
    `the body of the request was in an unknown format (${contentType}) - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
  );
}
