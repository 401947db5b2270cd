import {
  type AgentDeployment,
  type AgentRevision,
  type Container,
  isReservedEnvName,
  isReservedMetadataKey,
  RESERVED_METADATA_DOMAINS,
  RESERVED_NAME_PREFIX,
} from "@agentplane/crds";
import { nameOf } from "./names.ts";

/**
 * Defence in depth behind the control plane's validation: a custom resource written directly (with
 * kubectl, or by a compromised control plane) is checked against the same allow-list before the
 * operator renders anything from it. A spec that fails is not rolled out at all; the reconciler
 * reports the violations (condition + Warning Event). Rejecting instead of silently stripping keeps
 * what runs equal to what was asked for, and tells the author which field to fix.
 */

/** Volume sources a deployment may use: none reaches the node, the cluster's storage or an API token. */
const VOLUME_SOURCES = new Set(["configMap", "secret", "emptyDir", "projected", "downwardAPI"]);
const PROJECTED_SOURCES = new Set(["configMap", "secret", "downwardAPI"]);

export interface Violation {
  /** Path of the offending field, e.g. `AgentRevision spec.template.resources.volumes[0].hostPath`. */
  field: string;
  message: string;
}

export type ReferencedKind = "Secret" | "ConfigMap" | "ServiceAccount";

/** An object in the deployment's namespace that the spec names and that is not the deployment's own. */
export interface ForeignReference {
  kind: ReferencedKind;
  name: string;
}

export interface PolicyContext {
  /** Whether the object is shared with the deployment's workspace (the administrator's `SHARED_WITH_ANNOTATION`). */
  isShared(ref: ForeignReference): boolean;
}

/** The deployment's own objects are named `<deployment id>-…` (the control plane's convention). */
function isOwn(agd: AgentDeployment, name: string): boolean {
  return name.startsWith(`${nameOf(agd)}-`);
}

/**
 * The objects whose sharing decides the verdict, so the caller can look them up before calling
 * `policyViolations` (which stays synchronous and pure).
 */
export function foreignReferences(agd: AgentDeployment, revision: AgentRevision): ForeignReference[] {
  const asked = new Map<string, ForeignReference>();
  policyViolations(agd, revision, {
    isShared: (ref) => {
      asked.set(`${ref.kind}/${ref.name}`, ref);
      return false;
    },
  });
  return [...asked.values()];
}

type Json = Record<string, any>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null;

/** Every violation of the allow-list by the deployment and the revision it would roll out. */
export function policyViolations(agd: AgentDeployment, revision: AgentRevision, context: PolicyContext): Violation[] {
  const found: Violation[] = [];
  const add = (field: string, message: string) => found.push({ field, message });
  const reference = (kind: ReferencedKind) => (field: string, name: unknown) => {
    if (typeof name !== "string") add(field, `${kind} name missing`);
    else if (!isOwn(agd, name) && !context.isShared({ kind, name })) {
      add(field, `${kind} "${name}" is neither this deployment's nor shared with its workspace`);
    }
  };
  const secret = reference("Secret");
  const configMap = reference("ConfigMap");

  const agdField = (path: string) => `AgentDeployment ${path}`;
  if (agd.spec.apiKeysSecretName !== undefined) secret(agdField("spec.apiKeysSecretName"), agd.spec.apiKeysSecretName);
  const external = agd.spec.redis?.externalUrlSecretRef;
  if (external) secret(agdField("spec.redis.externalUrlSecretRef.name"), external.name);

  const at = (path: string) => `AgentRevision ${path}`;
  const template = revision.spec.template;
  if (template.secretName !== undefined) secret(at("spec.template.secretName"), template.secretName);
  (template.secretReferences ?? []).forEach((ref, i) => {
    const field = at(`spec.template.secretReferences[${i}]`);
    secret(`${field}.secretName`, ref.secretName);
    if (isReservedEnvName(ref.name)) add(`${field}.name`, `${ref.name} is a setting of the agent server`);
  });

  const resources = template.resources;
  const base = "spec.template.resources";
  if (resources?.serviceAccountName !== undefined) {
    const name = resources.serviceAccountName;
    if (!context.isShared({ kind: "ServiceAccount", name })) {
      add(at(`${base}.serviceAccountName`), `ServiceAccount "${name}" is not shared with this workspace`);
    }
  }
  (resources?.imagePullSecrets ?? []).forEach((ref, i) => {
    secret(at(`${base}.imagePullSecrets[${i}].name`), ref.name);
  });
  (resources?.volumes ?? []).forEach((volume, i) => {
    checkVolume(volume as Json, at(`${base}.volumes[${i}]`), add, secret, configMap);
  });
  (resources?.volumeMounts ?? []).forEach((mount, i) => {
    if (mount.mountPropagation !== undefined && mount.mountPropagation !== "None") {
      add(at(`${base}.volumeMounts[${i}].mountPropagation`), "mount propagation reaches the node's mounts");
    }
  });
  for (const [list, containers] of [
    ["initContainers", resources?.initContainers],
    ["sidecars", resources?.sidecars],
  ] as const) {
    (containers ?? []).forEach((container, i) => {
      checkContainer(container, at(`${base}.${list}[${i}]`), add, secret, configMap);
    });
  }
  for (const field of ["labels", "annotations"] as const) {
    for (const key of Object.keys(resources?.[field] ?? {})) {
      if (isReservedMetadataKey(key)) {
        add(at(`${base}.${field}["${key}"]`), `keys under ${RESERVED_METADATA_DOMAINS.join(", ")} are reserved`);
      }
    }
  }
  return found;
}

type Add = (field: string, message: string) => void;
type ReferenceCheck = (field: string, name: unknown) => void;

function checkVolume(volume: Json, field: string, add: Add, secret: ReferenceCheck, configMap: ReferenceCheck): void {
  if (typeof volume.name === "string" && volume.name.startsWith(RESERVED_NAME_PREFIX)) {
    add(`${field}.name`, `volume names starting with ${RESERVED_NAME_PREFIX} are the platform's`);
  }
  for (const [source, spec] of Object.entries(volume)) {
    if (source === "name") continue;
    if (!VOLUME_SOURCES.has(source)) {
      add(
        `${field}.${source}`,
        `${source} volumes are not allowed (configMap, secret, emptyDir, projected, downwardAPI)`,
      );
      continue;
    }
    if (source === "secret") secret(`${field}.secret.secretName`, isObject(spec) ? spec.secretName : undefined);
    if (source === "configMap") configMap(`${field}.configMap.name`, isObject(spec) ? spec.name : undefined);
    if (source === "projected") {
      const sources: unknown[] = isObject(spec) && Array.isArray(spec.sources) ? spec.sources : [];
      sources.forEach((projection, j) => {
        for (const [kind, inner] of Object.entries(isObject(projection) ? projection : {})) {
          const path = `${field}.projected.sources[${j}].${kind}`;
          if (!PROJECTED_SOURCES.has(kind)) add(path, `projected ${kind} is not allowed (it may carry an API token)`);
          else if (kind === "secret") secret(`${path}.name`, isObject(inner) ? inner.name : undefined);
          else if (kind === "configMap") configMap(`${path}.name`, isObject(inner) ? inner.name : undefined);
        }
      });
    }
  }
}

function checkContainer(
  container: Container,
  field: string,
  add: Add,
  secret: ReferenceCheck,
  configMap: ReferenceCheck,
): void {
  const c = container as Json;
  if (typeof c.name === "string" && c.name.startsWith(RESERVED_NAME_PREFIX)) {
    add(`${field}.name`, `container names starting with ${RESERVED_NAME_PREFIX} are the platform's`);
  }
  const sc: Json = isObject(c.securityContext) ? c.securityContext : {};
  const scField = `${field}.securityContext`;
  if (sc.privileged === true) add(`${scField}.privileged`, "privileged containers are not allowed");
  if (sc.allowPrivilegeEscalation === true) {
    add(`${scField}.allowPrivilegeEscalation`, "privilege escalation is not allowed");
  }
  if (sc.runAsNonRoot === false) add(`${scField}.runAsNonRoot`, "containers must run as non-root");
  if (sc.runAsUser === 0) add(`${scField}.runAsUser`, "containers must not run as UID 0");
  const added: unknown[] = Array.isArray(sc.capabilities?.add) ? sc.capabilities.add : [];
  for (const capability of added) {
    if (capability !== "NET_BIND_SERVICE")
      add(`${scField}.capabilities.add`, `capability ${capability} is not allowed`);
  }
  const seccomp = sc.seccompProfile?.type;
  if (seccomp !== undefined && seccomp !== "RuntimeDefault" && seccomp !== "Localhost") {
    add(`${scField}.seccompProfile.type`, "seccomp must be RuntimeDefault or Localhost");
  }
  const apparmor = sc.appArmorProfile?.type;
  if (apparmor !== undefined && apparmor !== "RuntimeDefault" && apparmor !== "Localhost") {
    add(`${scField}.appArmorProfile.type`, "AppArmor must be RuntimeDefault or Localhost");
  }
  if (sc.procMount !== undefined && sc.procMount !== "Default")
    add(`${scField}.procMount`, "procMount must be Default");
  if (sc.seLinuxOptions !== undefined) add(`${scField}.seLinuxOptions`, "custom SELinux options are not allowed");
  if (sc.windowsOptions?.hostProcess === true)
    add(`${scField}.windowsOptions.hostProcess`, "host processes are not allowed");
  (Array.isArray(c.ports) ? c.ports : []).forEach((port: Json, i: number) => {
    if (port?.hostPort) add(`${field}.ports[${i}].hostPort`, "host ports are not allowed");
    if (port?.hostIP) add(`${field}.ports[${i}].hostIP`, "host ports are not allowed");
  });
  if (c.volumeDevices !== undefined) add(`${field}.volumeDevices`, "raw block devices are not allowed");
  (Array.isArray(c.volumeMounts) ? c.volumeMounts : []).forEach((mount: Json, i: number) => {
    if (mount?.mountPropagation !== undefined && mount.mountPropagation !== "None") {
      add(`${field}.volumeMounts[${i}].mountPropagation`, "mount propagation reaches the node's mounts");
    }
  });
  (Array.isArray(c.env) ? c.env : []).forEach((variable: Json, i: number) => {
    const from = variable?.valueFrom;
    if (from?.secretKeyRef) secret(`${field}.env[${i}].valueFrom.secretKeyRef.name`, from.secretKeyRef.name);
    if (from?.configMapKeyRef)
      configMap(`${field}.env[${i}].valueFrom.configMapKeyRef.name`, from.configMapKeyRef.name);
  });
  (Array.isArray(c.envFrom) ? c.envFrom : []).forEach((source: Json, i: number) => {
    if (source?.secretRef) secret(`${field}.envFrom[${i}].secretRef.name`, source.secretRef.name);
    if (source?.configMapRef) configMap(`${field}.envFrom[${i}].configMapRef.name`, source.configMapRef.name);
  });
}

/** One line naming every offending field, for the condition, the revision message and the Event. */
export function describeViolations(violations: readonly Violation[]): string {
  return violations.map((v) => `${v.field}: ${v.message}`).join("; ");
}

/**
 * The security context every container of a rendered pod gets. The allow-list has already refused
 * unsafe values; this fills in what the author left out, so a sidecar without a securityContext
 * still runs non-root, unprivileged, without capabilities and under RuntimeDefault seccomp.
 */
export function hardenedSecurityContext(requested: unknown = {}): Json {
  const sc: Json = isObject(requested) ? requested : {};
  const add = Array.isArray(sc.capabilities?.add) && sc.capabilities.add.length ? { add: sc.capabilities.add } : {};
  return {
    ...sc,
    privileged: false,
    runAsNonRoot: true,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ["ALL"], ...add },
    seccompProfile: sc.seccompProfile?.type === "Localhost" ? sc.seccompProfile : { type: "RuntimeDefault" },
  };
}

export function hardenedContainer<T extends object>(container: T): T {
  return { ...container, securityContext: hardenedSecurityContext((container as Json).securityContext) };
}
