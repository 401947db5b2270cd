import { rejectBuiltin } from "./builtin-validation.ts";
import { badRequest, invalid, KubeError } from "./errors.ts";
import { kubeValidationErrors } from "./kube-validation.ts";
import type { ResourceType } from "./resources.ts";
import { type FieldError, validateAndPrune } from "./schema-validation.ts";
import type { KubeObject } from "./store.ts";

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_NAMES = new Set(["namespaces", "services"]);

function nameErrors(resource: ResourceType, name: string): FieldError[] {
  const label = LABEL_NAMES.has(resource.plural) && resource.group === "";
  const valid = label ? name.length <= 63 && DNS_LABEL.test(name) : name.length <= 253 && DNS_SUBDOMAIN.test(name);
  if (valid) return [];
  const rule = label ? "a lowercase RFC 1123 label" : "a lowercase RFC 1123 subdomain";
  return [
    {
      field: "metadata.name",
      reason: "FieldValueInvalid",
      message: `Invalid value: ${JSON.stringify(name)}: must be ${rule} (lowercase alphanumerics, '-' or '.', starting and ending alphanumeric)`,
    },
  ];
}

function metadataErrors(object: KubeObject): FieldError[] {
  const errors: FieldError[] = [];
  const references = object.metadata.ownerReferences ?? [];
  references.forEach((reference, i) => {
    for (const field of ["apiVersion", "kind", "name", "uid"] as const) {
      if (!reference[field]) {
        errors.push({
          field: `metadata.ownerReferences[${i}].${field}`,
          reason: "FieldValueRequired",
          message: "Required value",
        });
      }
    }
  });
  if (references.filter((reference) => reference.controller).length > 1) {
    errors.push({
      field: "metadata.ownerReferences",
      reason: "FieldValueInvalid",
      message: "Invalid value: Only one reference can have Controller set to true",
    });
  }
  for (const [field, map] of [
    ["labels", object.metadata.labels],
    ["annotations", object.metadata.annotations],
  ] as const) {
    for (const [key, value] of Object.entries(map ?? {})) {
      if (typeof value !== "string") {
        errors.push({
          field: `metadata.${field}`,
          reason: "FieldValueTypeInvalid",
          message: `Invalid value: ${JSON.stringify(key)}: must be a string`,
        });
      }
    }
  }
  return errors;
}

/**
 * Validates an object about to be stored: name, metadata and, for custom resources, the CRD
 * schema (pruning undeclared fields, or rejecting them under fieldValidation=Strict).
 */
export function admit(resource: ResourceType, object: KubeObject, old: KubeObject | undefined, strict: boolean): void {
  checkMicroTimes(resource, object);
  if (resource.validateBuiltin) rejectBuiltin(resource, object, resource.validateBuiltin(object));
  const errors = [
    ...(old ? [] : nameErrors(resource, object.metadata.name)),
    ...metadataErrors(object),
    ...kubeValidationErrors(resource, object, old),
  ];
  if (resource.schema) {
    const check = validateAndPrune(resource.schema, object, old);
    if (strict && check.unknownFields.length > 0) {
      throw badRequest(`strict decoding error: ${check.unknownFields.map((f) => `unknown field "${f}"`).join(", ")}`);
    }
    errors.push(...check.errors);
  }
  if (errors.length > 0) throw invalid(resource, object.metadata.name, errors);
}

const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;
const MICRO_TIME_FIELDS: Record<string, [string, string][]> = {
  "coordination.k8s.io/leases": [
    ["spec", "acquireTime"],
    ["spec", "renewTime"],
  ],
  "events.k8s.io/events": [["", "eventTime"]],
};

/**
 * metav1.MicroTime fields must carry exactly six fractional digits: the apiserver decodes them with
 * a fixed layout and answers anything else (e.g. `Date#toISOString()`) with 400.
 */
export function checkMicroTimes(resource: ResourceType, object: KubeObject): void {
  for (const [parent, field] of MICRO_TIME_FIELDS[`${resource.group}/${resource.plural}`] ?? []) {
    const holder = (parent ? object[parent] : object) as Record<string, unknown> | undefined;
    const value = holder?.[field];
    if (value === undefined || value === null || (typeof value === "string" && MICRO_TIME.test(value))) continue;
    throw badRequest(
      `${resource.kind} in version "${resource.version}" cannot be handled as a ${resource.kind}: parsing time ${JSON.stringify(value)} as "2006-01-02T15:04:05.000000Z07:00": cannot parse`,
    );
  }
}

/** Defaults the apiserver fills in for built-in kinds this project reads back. */
export function applyDefaults(resource: ResourceType, object: KubeObject): void {
  const spec = object.spec as Record<string, unknown> | undefined;
  if (resource.group === "apps" && spec && resource.plural !== "replicasets") {
    spec.replicas ??= 1;
    spec.revisionHistoryLimit ??= 10;
  }
  if (resource.group === "apps" && resource.plural === "replicasets" && spec) spec.replicas ??= 1;
  if (resource.plural === "deployments" && spec) {
    spec.progressDeadlineSeconds ??= 600;
    spec.strategy ??= { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "25%", maxSurge: "25%" } };
  }
  if (resource.plural === "namespaces" && resource.group === "") object.status ??= { phase: "Active" };
  if (resource.plural === "pods" && resource.group === "") object.status ??= { phase: "Pending" };
  if (resource.plural === "secrets" && resource.group === "") object.type ??= "Opaque";
}

/** The body's apiVersion/kind must name the endpoint's resource. */
export function checkKind(resource: ResourceType, body: Record<string, unknown>, apiVersion: string): void {
  if (body.apiVersion !== undefined && body.apiVersion !== apiVersion) {
    throw badRequest(
      `the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${apiVersion})`,
    );
  }
  if (body.kind !== undefined && body.kind !== resource.kind) {
    throw badRequest(`the kind in the data (${String(body.kind)}) does not match the expected kind (${resource.kind})`);
  }
}

export function forbidden(message: string): KubeError {
  return new KubeError(403, "Forbidden", message);
}
