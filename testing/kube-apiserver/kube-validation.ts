import { isDeepStrictEqual } from "node:util";
import { parseQuantity } from "@agentplane/crds";
import type { ResourceType } from "./resources.ts";
import type { FieldError } from "./schema-validation.ts";
import type { KubeObject } from "./store.ts";

/**
 * The apiserver's own validation of the built-in kinds the operator writes (pkg/apis/*\/validation),
 * beyond what their OpenAPI schema says: the rules a schema-valid object can still break. Only the
 * rules listed here are emulated (docs/testing.md lists what is not).
 */

type Json = Record<string, any>;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** Every volume source a core/v1 Volume can name (exactly one must be set). */
const VOLUME_SOURCES = [
  "hostPath",
  "emptyDir",
  "gcePersistentDisk",
  "awsElasticBlockStore",
  "gitRepo",
  "secret",
  "nfs",
  "iscsi",
  "glusterfs",
  "persistentVolumeClaim",
  "rbd",
  "flexVolume",
  "cinder",
  "cephfs",
  "flocker",
  "downwardAPI",
  "fc",
  "azureFile",
  "configMap",
  "vsphereVolume",
  "quobyte",
  "azureDisk",
  "photonPersistentDisk",
  "projected",
  "portworxVolume",
  "scaleIO",
  "storageos",
  "csi",
  "ephemeral",
  "image",
];
/** events.k8s.io/v1 `note` limit; Go's len() counts bytes. */
const NOTE_LENGTH_LIMIT = 1024;

const invalid = (field: string, value: unknown, message: string): FieldError => ({
  field,
  reason: "FieldValueInvalid",
  message: `Invalid value: ${JSON.stringify(value)}: ${message}`,
});
const required = (field: string, message: string): FieldError => ({
  field,
  reason: "FieldValueRequired",
  message: `Required value: ${message}`,
});
const forbidden = (field: string, message: string): FieldError => ({
  field,
  reason: "FieldValueInvalid",
  message: `Forbidden: ${message}`,
});

/** IANA_SVC_NAME: what a container port's name must be (a Service's targetPort refers to it). */
export function portNameErrors(field: string, name: string): FieldError[] {
  const messages: string[] = [];
  if (name.length > 15) messages.push("must be no more than 15 characters");
  if (!/^[-a-z0-9]+$/.test(name))
    messages.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
  if (name.includes("--")) messages.push("must not contain consecutive hyphens");
  if (!/[a-z]/.test(name)) messages.push("must contain at least one letter (a-z)");
  if (name.startsWith("-") || name.endsWith("-")) messages.push("must not begin or end with a hyphen");
  return messages.map((message) => invalid(field, name, message));
}

function labelErrors(field: string, labels: unknown): FieldError[] {
  const errors: FieldError[] = [];
  for (const [key, value] of Object.entries((labels ?? {}) as Record<string, unknown>)) {
    const slash = key.lastIndexOf("/");
    const prefix = slash < 0 ? undefined : key.slice(0, slash);
    const name = slash < 0 ? key : key.slice(slash + 1);
    if (
      name.length > 63 ||
      !QUALIFIED_NAME.test(name) ||
      (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    ) {
      errors.push(
        invalid(
          field,
          key,
          "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
      );
    }
    if (typeof value === "string" && (value.length > 63 || !LABEL_VALUE.test(value))) {
      errors.push(
        invalid(
          field,
          value,
          "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
      );
    }
  }
  return errors;
}

function resourceErrors(field: string, resources: Json | undefined): FieldError[] {
  const errors: FieldError[] = [];
  const limits: Json = resources?.limits ?? {};
  for (const [name, request] of Object.entries((resources?.requests ?? {}) as Json)) {
    const limit = parseQuantity(limits[name]);
    const wanted = parseQuantity(request);
    if (limit !== undefined && wanted !== undefined && wanted > limit) {
      errors.push(
        invalid(
          `${field}.requests[${name}]`,
          request,
          `must be less than or equal to ${name} limit of ${limits[name]}`,
        ),
      );
    }
  }
  return errors;
}

function containerErrors(field: string, container: Json, volumeNames: Set<string>): FieldError[] {
  const errors: FieldError[] = [];
  if (typeof container.name === "string" && !DNS_LABEL.test(container.name)) {
    errors.push(
      invalid(
        `${field}.name`,
        container.name,
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'",
      ),
    );
  }
  const portNames = new Set<string>();
  (container.ports ?? []).forEach((port: Json, i: number) => {
    if (typeof port?.name !== "string" || port.name === "") return;
    errors.push(...portNameErrors(`${field}.ports[${i}].name`, port.name));
    if (portNames.has(port.name)) {
      errors.push({
        field: `${field}.ports[${i}].name`,
        reason: "FieldValueInvalid",
        message: `Duplicate value: ${JSON.stringify(port.name)}`,
      });
    }
    portNames.add(port.name);
  });
  errors.push(...resourceErrors(`${field}.resources`, container.resources));
  (container.volumeMounts ?? []).forEach((mount: Json, i: number) => {
    if (!volumeNames.has(mount?.name)) {
      errors.push({
        field: `${field}.volumeMounts[${i}].name`,
        reason: "FieldValueInvalid",
        message: `Not found: ${JSON.stringify(mount?.name)}`,
      });
    }
  });
  for (const probe of ["livenessProbe", "readinessProbe", "startupProbe"]) {
    const handler = container[probe] as Json | undefined;
    if (!handler) continue;
    const kinds = ["exec", "httpGet", "tcpSocket", "grpc"].filter((k) => handler[k] !== undefined);
    if (kinds.length !== 1) errors.push(required(`${field}.${probe}`, "must specify a handler type"));
    if ((probe === "livenessProbe" || probe === "startupProbe") && (handler.successThreshold ?? 1) !== 1) {
      errors.push(invalid(`${field}.${probe}.successThreshold`, handler.successThreshold, "must be 1"));
    }
  }
  return errors;
}

/** core/v1 PodSpec validation (ValidatePodSpec), the parts listed in this module's comment. */
export function podSpecErrors(field: string, spec: Json | undefined, claimNames: string[] = []): FieldError[] {
  if (!spec) return [];
  const errors: FieldError[] = [];
  // A StatefulSet's pods also mount the volumes of its claim templates.
  const volumeNames = new Set<string>(claimNames);
  (spec.volumes ?? []).forEach((volume: Json, i: number) => {
    const at = `${field}.volumes[${i}]`;
    if (typeof volume?.name === "string" && !DNS_LABEL.test(volume.name)) {
      errors.push(
        invalid(
          `${at}.name`,
          volume.name,
          "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'",
        ),
      );
    }
    if (volumeNames.has(volume?.name)) {
      errors.push({
        field: `${at}.name`,
        reason: "FieldValueInvalid",
        message: `Duplicate value: ${JSON.stringify(volume.name)}`,
      });
    }
    volumeNames.add(volume?.name);
    const sources = VOLUME_SOURCES.filter((source) => volume?.[source] !== undefined && volume[source] !== null);
    if (sources.length === 0) errors.push(required(at, "must specify a volume type"));
    if (sources.length > 1) errors.push(forbidden(`${at}.${sources[1]}`, "may not specify more than 1 volume type"));
  });
  const names = new Set<string>();
  for (const list of ["initContainers", "containers"]) {
    (spec[list] ?? []).forEach((container: Json, i: number) => {
      const at = `${field}.${list}[${i}]`;
      if (names.has(container?.name)) {
        errors.push({
          field: `${at}.name`,
          reason: "FieldValueInvalid",
          message: `Duplicate value: ${JSON.stringify(container.name)}`,
        });
      }
      names.add(container?.name);
      errors.push(...containerErrors(at, container ?? {}, volumeNames));
    });
  }
  return errors;
}

function selectorMatches(selector: Json | undefined, labels: Record<string, string> | undefined): boolean {
  const matchLabels: Record<string, string> = selector?.matchLabels ?? {};
  if (!Object.entries(matchLabels).every(([k, v]) => labels?.[k] === v)) return false;
  return ((selector?.matchExpressions ?? []) as Json[]).every((e) => {
    const value = labels?.[e.key];
    if (e.operator === "In") return value !== undefined && e.values.includes(value);
    if (e.operator === "NotIn") return value === undefined || !e.values.includes(value);
    if (e.operator === "Exists") return value !== undefined;
    if (e.operator === "DoesNotExist") return value === undefined;
    return false;
  });
}

/** A workload's selector must be non-empty and select its own template's labels. */
function workloadErrors(spec: Json | undefined): FieldError[] {
  if (!spec) return [];
  const errors: FieldError[] = [];
  const selector = spec.selector as Json | undefined;
  const empty =
    !selector || (Object.keys(selector.matchLabels ?? {}).length === 0 && !(selector.matchExpressions ?? []).length);
  if (empty) errors.push(invalid("spec.selector", selector ?? {}, "empty selector is invalid for deployment"));
  const labels = spec.template?.metadata?.labels;
  errors.push(...labelErrors("spec.template.metadata.labels", labels));
  if (!empty && !selectorMatches(selector, labels)) {
    errors.push(invalid("spec.template.metadata.labels", labels ?? {}, "`selector` does not match template `labels`"));
  }
  const claims = ((spec.volumeClaimTemplates ?? []) as Json[]).map((claim) => claim?.metadata?.name);
  errors.push(...podSpecErrors("spec.template.spec", spec.template?.spec, claims));
  return errors;
}

/** StatefulSet: what may change after creation (ValidateStatefulSetUpdate). */
const STATEFULSET_MUTABLE = [
  "replicas",
  "ordinals",
  "template",
  "updateStrategy",
  "persistentVolumeClaimRetentionPolicy",
  "minReadySeconds",
];

function updateErrors(resource: ResourceType, object: KubeObject, old: KubeObject): FieldError[] {
  const spec = (object.spec ?? {}) as Json;
  const oldSpec = (old.spec ?? {}) as Json;
  if (resource.group === "apps" && resource.plural === "statefulsets") {
    const frozen = (s: Json) => Object.fromEntries(Object.entries(s).filter(([k]) => !STATEFULSET_MUTABLE.includes(k)));
    if (!isDeepStrictEqual(frozen(spec), frozen(oldSpec))) {
      return [
        forbidden(
          "spec",
          "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ),
      ];
    }
  }
  if (resource.group === "apps" && !isDeepStrictEqual(spec.selector, oldSpec.selector)) {
    return [invalid("spec.selector", spec.selector ?? {}, "field is immutable")];
  }
  return [];
}

/** Kubernetes-side validation of a built-in object about to be stored (`old` on updates). */
export function kubeValidationErrors(
  resource: ResourceType,
  object: KubeObject,
  old: KubeObject | undefined,
): FieldError[] {
  if (resource.schema) return [];
  const errors = labelErrors("metadata.labels", object.metadata.labels);
  const key = `${resource.group}/${resource.plural}`;
  const spec = object.spec as Json | undefined;
  if (key === "apps/deployments" || key === "apps/statefulsets" || key === "apps/replicasets") {
    errors.push(...workloadErrors(spec));
  }
  if (key === "/pods") errors.push(...podSpecErrors("spec", spec));
  if (key === "autoscaling/horizontalpodautoscalers" && spec) {
    if (typeof spec.minReplicas === "number" && spec.maxReplicas < spec.minReplicas) {
      errors.push(invalid("spec.maxReplicas", spec.maxReplicas, "must be greater than or equal to `minReplicas`"));
    }
  }
  if (key === "events.k8s.io/events") {
    const note = (object as Json).note;
    if (typeof note === "string" && Buffer.byteLength(note) > NOTE_LENGTH_LIMIT) {
      errors.push(invalid("note", note, `can have at most ${NOTE_LENGTH_LIMIT} characters`));
    }
  }
  if (old) errors.push(...updateErrors(resource, object, old));
  return errors;
}
