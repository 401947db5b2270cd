import { isDeepStrictEqual } from "node:util";
import { KubeError } from "./errors.ts";
import type { ResourceRegistry, ResourceType } from "./resources.ts";
import type { KubeObject, OwnerReference } from "./store.ts";

/** What the apiserver asks its authorizer about a request (authorizer.Attributes, resource requests only). */
export interface Attributes {
  user: string;
  verb: string;
  group: string;
  /** The resource, with `/subresource` when there is one (as RBAC rules name it). */
  resource: string;
  namespace?: string;
  name?: string;
}

/** Decides a request, e.g. by the chart's RBAC rules (test/helm-rbac.test.ts). */
export type Authorizer = (attributes: Attributes) => boolean;

/** The authorizer bound to the requesting user, as admission plugins see it. */
export type UserAuthorizer = (attributes: Omit<Attributes, "user">) => boolean;

const qualified = (resource: Pick<ResourceType, "group" | "plural">) =>
  resource.group ? `${resource.plural}.${resource.group}` : resource.plural;

/** RBAC's 403, worded as the apiserver words it. */
export function forbiddenRequest(attributes: Attributes, resource: ResourceType): KubeError {
  const scope = attributes.namespace ? `in the namespace "${attributes.namespace}"` : "at the cluster scope";
  const object = attributes.name ? `${qualified(resource)} "${attributes.name}"` : qualified(resource);
  return new KubeError(
    403,
    "Forbidden",
    `${object} is forbidden: User "${attributes.user}" cannot ${attributes.verb} resource "${attributes.resource}" in API group "${attributes.group}" ${scope}`,
    { ...(attributes.name ? { name: attributes.name } : {}), group: resource.group, kind: resource.plural },
  );
}

function admissionForbidden(resource: ResourceType, name: string, why: string): KubeError {
  return new KubeError(403, "Forbidden", `${qualified(resource)} "${name}" is forbidden: ${why}`, {
    name,
    group: resource.group,
    kind: resource.plural,
  });
}

const refKey = (ref: OwnerReference) => ref.uid;

/**
 * The OwnerReferencesPermissionEnforcement admission plugin (plugin/pkg/admission/gc): changing an
 * object's ownerReferences needs `delete` on the object (updates only: whoever may create it could
 * also not have), and each reference that newly sets `blockOwnerDeletion: true` needs `update` on the
 * owner's `finalizers` subresource, since it can hold up the owner's deletion.
 */
export function checkOwnerReferences(
  registry: ResourceRegistry,
  resource: ResourceType,
  object: KubeObject,
  old: KubeObject | undefined,
  can: UserAuthorizer,
): void {
  const references = object.metadata.ownerReferences ?? [];
  const before = old?.metadata.ownerReferences ?? [];
  if (old && isDeepStrictEqual(references, before)) return;
  if (!old && references.length === 0) return;
  const namespace = object.metadata.namespace;
  const name = object.metadata.name;
  if (old && !can({ verb: "delete", group: resource.group, resource: resource.plural, namespace, name })) {
    throw admissionForbidden(resource, name, "cannot set an ownerRef on a resource you can't delete: , <nil>");
  }
  const blockedBefore = new Set(before.filter((r) => r.blockOwnerDeletion).map(refKey));
  for (const reference of references) {
    if (!reference.blockOwnerDeletion || blockedBefore.has(refKey(reference))) continue;
    const owner = registry.all().find((t) => t.kind === reference.kind && apiVersion(t) === reference.apiVersion);
    if (!owner) {
      throw admissionForbidden(
        resource,
        name,
        `cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion ${reference.apiVersion} Kind ${reference.kind}: no matches for kind "${reference.kind}" in version "${reference.apiVersion}"`,
      );
    }
    const finalizers = {
      verb: "update",
      group: owner.group,
      resource: `${owner.plural}/finalizers`,
      namespace,
      name: reference.name,
    };
    if (!can(finalizers)) {
      throw admissionForbidden(
        resource,
        name,
        "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: , <nil>",
      );
    }
  }
}

const apiVersion = (type: ResourceType) => (type.group ? `${type.group}/${type.version}` : type.version);
