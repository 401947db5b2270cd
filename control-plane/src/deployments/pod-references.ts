import type { ValidationIssue } from "@agentplane/common";
import {
  type Container,
  type SecretReference as CrSecretReference,
  type Resources,
  SHARED_WITH_ANNOTATION,
} from "@agentplane/crds";
import type { PolicyEnvFromSource, PolicyEnvVar, PolicyVolumeSpec } from "./pod-policy.ts";

/**
 * The Secrets, ConfigMaps and ServiceAccount a deployment refers to by name. The service checks each
 * against the cluster: none may be used unless an administrator shared it with the workspace.
 */

type Loc = (string | number)[];

export type ReferencedKind = "Secret" | "ConfigMap" | "ServiceAccount";

export interface ObjectReference {
  kind: ReferencedKind;
  name: string;
  /** Where the name is in the API request. */
  loc: Loc;
}

const RESOURCE_SPEC: Loc = ["body", "source_config", "resource_spec"];

function containerReferences(container: Container, loc: Loc): ObjectReference[] {
  const refs: ObjectReference[] = [];
  const env = (container.env ?? []) as PolicyEnvVar[];
  env.forEach((variable, index) => {
    const at = [...loc, "env", index, "valueFrom"];
    if (variable.valueFrom?.secretKeyRef) {
      refs.push({ kind: "Secret", name: variable.valueFrom.secretKeyRef.name, loc: [...at, "secretKeyRef", "name"] });
    }
    if (variable.valueFrom?.configMapKeyRef) {
      refs.push({
        kind: "ConfigMap",
        name: variable.valueFrom.configMapKeyRef.name,
        loc: [...at, "configMapKeyRef", "name"],
      });
    }
  });
  const envFrom = (container.envFrom ?? []) as PolicyEnvFromSource[];
  envFrom.forEach((source, index) => {
    if (source.secretRef)
      refs.push({ kind: "Secret", name: source.secretRef.name, loc: [...loc, "envFrom", index, "secretRef", "name"] });
    if (source.configMapRef) {
      refs.push({
        kind: "ConfigMap",
        name: source.configMapRef.name,
        loc: [...loc, "envFrom", index, "configMapRef", "name"],
      });
    }
  });
  return refs;
}

/**
 * Every Secret, ConfigMap and ServiceAccount a revision template names (in its custom-resource
 * spelling), each with where it sits in the API request. None of them may be used unless an
 * administrator shared it with the workspace.
 */
export function referencedObjects(
  resources: Resources | undefined,
  secretReferences: CrSecretReference[] | undefined,
): ObjectReference[] {
  const refs: ObjectReference[] = [];
  (secretReferences ?? []).forEach((ref, index) => {
    refs.push({ kind: "Secret", name: ref.secretName, loc: ["body", "secret_references", index, "secret_name"] });
  });
  if (resources?.serviceAccountName) {
    refs.push({
      kind: "ServiceAccount",
      name: resources.serviceAccountName,
      loc: [...RESOURCE_SPEC, "service_account_name"],
    });
  }
  (resources?.imagePullSecrets ?? []).forEach((secret, index) => {
    refs.push({ kind: "Secret", name: secret.name, loc: [...RESOURCE_SPEC, "image_pull_secrets", index, "name"] });
  });
  const volumes = (resources?.volumes ?? []) as PolicyVolumeSpec[];
  volumes.forEach((volume, index) => {
    const at = [...RESOURCE_SPEC, "volumes", index];
    if (volume.secret)
      refs.push({ kind: "Secret", name: volume.secret.secretName, loc: [...at, "secret", "secretName"] });
    if (volume.configMap)
      refs.push({ kind: "ConfigMap", name: volume.configMap.name, loc: [...at, "configMap", "name"] });
    (volume.projected?.sources ?? []).forEach((source, i) => {
      const sourceAt = [...at, "projected", "sources", i];
      if (source.secret) refs.push({ kind: "Secret", name: source.secret.name, loc: [...sourceAt, "secret", "name"] });
      if (source.configMap) {
        refs.push({ kind: "ConfigMap", name: source.configMap.name, loc: [...sourceAt, "configMap", "name"] });
      }
    });
  });
  (resources?.initContainers ?? []).forEach((container, index) => {
    refs.push(...containerReferences(container, [...RESOURCE_SPEC, "init_containers", index]));
  });
  (resources?.sidecars ?? []).forEach((container, index) => {
    refs.push(...containerReferences(container, [...RESOURCE_SPEC, "sidecars", index]));
  });
  return refs;
}

/** The 422 entry for a reference to an object not shared with the workspace (absent ones look the same). */
export function notSharedIssue(ref: ObjectReference): ValidationIssue {
  return {
    loc: ref.loc,
    msg: `${ref.kind} '${ref.name}' is not shared with this workspace (an administrator shares it with the annotation ${SHARED_WITH_ANNOTATION})`,
    type: "reference_not_allowed",
  };
}
