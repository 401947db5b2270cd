import { randomBytes, randomUUID } from "node:crypto";
import { checkKind } from "./admission.ts";
import { badRequest, invalid } from "./errors.ts";
import type { Subresource } from "./managed-fields.ts";
import { isObject } from "./patch.ts";
import { apiVersionOf, type ResourceType } from "./resources.ts";
import type { KubeObject } from "./store.ts";

/** RFC 3339 at second precision, as metav1.Time serialises. */
export function timestamp(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, "Z");
}

/** Everything that bumps metadata.generation when it changes. */
export function specOf(object: KubeObject): Record<string, unknown> {
  const { metadata: _metadata, status: _status, ...rest } = object;
  return rest;
}

/** A new object from a create body: server-owned metadata filled in, status dropped where it is a subresource. */
export function newObject(resource: ResourceType, namespace: string | undefined, body: unknown): KubeObject {
  if (!isObject(body)) throw badRequest("the request body must be a JSON object");
  const apiVersion = apiVersionOf(resource);
  checkKind(resource, body, apiVersion);
  const metadata = isObject(body.metadata) ? { ...body.metadata } : {};
  if (
    resource.namespaced &&
    metadata.namespace !== undefined &&
    metadata.namespace !== "" &&
    metadata.namespace !== namespace
  ) {
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  }
  let name = typeof metadata.name === "string" ? metadata.name : "";
  if (!name && typeof metadata.generateName === "string" && metadata.generateName) {
    name = `${metadata.generateName}${randomBytes(3).toString("hex").slice(0, 5)}`;
  }
  if (!name) {
    throw invalid(resource, "", [
      {
        field: "metadata.name",
        reason: "FieldValueRequired",
        message: "Required value: name or generateName is required",
      },
    ]);
  }
  const object = { ...structuredClone(body), apiVersion, kind: resource.kind } as KubeObject;
  const { deletionTimestamp: _d, deletionGracePeriodSeconds: _g, managedFields: _m, namespace: _n, ...kept } = metadata;
  object.metadata = {
    ...kept,
    name,
    ...(resource.namespaced ? { namespace } : {}),
    uid: randomUUID(),
    resourceVersion: "",
    creationTimestamp: timestamp(),
    ...(resource.tracksGeneration ? { generation: 1 } : {}),
  } as KubeObject["metadata"];
  if (resource.statusSubresource) delete object.status;
  return object;
}

/** What an endpoint may change: only status on `/status`; all but status (if it is a subresource) elsewhere. */
export function scopeWrite(
  resource: ResourceType,
  current: KubeObject,
  body: KubeObject,
  subresource: Subresource,
): KubeObject {
  if (subresource === "status") {
    const next = structuredClone(current);
    if (body.status === undefined) delete next.status;
    else next.status = structuredClone(body.status);
    return next;
  }
  const next = { ...structuredClone(body), apiVersion: current.apiVersion, kind: current.kind } as KubeObject;
  const { uid, creationTimestamp, deletionTimestamp, deletionGracePeriodSeconds, generation, name, namespace } =
    current.metadata;
  next.metadata = {
    ...next.metadata,
    uid,
    creationTimestamp,
    name,
    ...(namespace !== undefined ? { namespace } : {}),
    ...(generation !== undefined ? { generation } : {}),
    ...(deletionTimestamp !== undefined ? { deletionTimestamp, deletionGracePeriodSeconds } : {}),
  } as KubeObject["metadata"];
  if (resource.statusSubresource) {
    if (current.status === undefined) delete next.status;
    else next.status = structuredClone(current.status);
  }
  return next;
}
