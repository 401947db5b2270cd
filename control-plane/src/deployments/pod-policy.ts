import type { ValidationIssue } from "@agentplane/common";
import {
  type Container,
  type SecretReference as CrSecretReference,
  isReservedEnvName,
  isReservedMetadataKey,
  RESERVED_METADATA_DOMAINS,
  RESERVED_NAME_PREFIX,
  type Resources,
  SHARED_WITH_ANNOTATION,
} from "@agentplane/crds";
import { z } from "zod";

/**
 * What a deployment may put into its pods: an allow-list in the manner of Knative Serving's pod-spec
 * validation. Every Kubernetes-shaped field a tenant sends (volumes, sidecars, init containers) is a
 * strict schema here, so a field not listed is refused with 422 naming it (and a deeply nested value
 * never gets further than the first unknown key); the checks that span fields are pure functions
 * over the parsed request. Objects a deployment refers to by name (Secrets, ConfigMaps, a
 * ServiceAccount) are collected by `referencedObjects` and checked against the cluster by the service.
 */

// ---------------------------------------------------------------------------------------------
// Environment variable names
// ---------------------------------------------------------------------------------------------

export const envVarName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)")
  .max(253);

/** An environment variable of the agent server itself (`secrets`, `secret_references`). */
export const agentEnvVarName = envVarName.refine((name) => !isReservedEnvName(name), "is reserved for the platform");

// ---------------------------------------------------------------------------------------------
// Names and small values
// ---------------------------------------------------------------------------------------------

export const dnsLabel = z
  .string()
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "must be a DNS-1123 label");
export const dnsSubdomain = z
  .string()
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, "must be a DNS-1123 subdomain");

const quantity = z
  .string()
  .max(64)
  .regex(/^[0-9]+(\.[0-9]+)?([KMGTPE]i?|[mkMGTPE]|[eE][0-9]+)?$/, "must be a Kubernetes quantity (e.g. 64Mi)");
const fileMode = z.int().min(0).max(0o777);
/** A relative path without `..` segments (where a key lands inside a volume). */
const relativePath = z
  .string()
  .min(1)
  .max(1024)
  .refine((path) => !path.startsWith("/") && !path.split("/").includes(".."), "must be a relative path without '..'");
const absolutePath = z.string().min(1).max(1024).startsWith("/", "must be an absolute path");
const port = z.int().min(1).max(65535);
const portRef = z.union([port, z.string().min(1).max(15)]);
const shortString = z.string().max(1024);

/** A field that exists on Kubernetes objects but that no deployment may set. */
const refused = (why: string) => z.never({ error: why }).optional();

// ---------------------------------------------------------------------------------------------
// Volumes: configMap, secret, emptyDir, projected (configMap / secret / downwardAPI sources)
// ---------------------------------------------------------------------------------------------

const keyToPath = z.strictObject({ key: z.string().min(1).max(253), path: relativePath, mode: fileMode.optional() });
const keyItems = z.array(keyToPath).max(64);

const downwardApiFile = z.strictObject({
  path: relativePath,
  fieldRef: z.strictObject({ fieldPath: shortString, apiVersion: shortString.optional() }).optional(),
  resourceFieldRef: z
    .strictObject({ containerName: dnsLabel.optional(), resource: shortString, divisor: quantity.optional() })
    .optional(),
  mode: fileMode.optional(),
});

const NOT_A_VOLUME_TYPE =
  "this volume type is not allowed: a deployment's volumes are configMap, secret, emptyDir or projected";

const projection = z
  .strictObject({
    configMap: z
      .strictObject({ name: dnsSubdomain, items: keyItems.optional(), optional: z.boolean().optional() })
      .optional(),
    secret: z
      .strictObject({ name: dnsSubdomain, items: keyItems.optional(), optional: z.boolean().optional() })
      .optional(),
    downwardAPI: z.strictObject({ items: z.array(downwardApiFile).max(64) }).optional(),
    serviceAccountToken: refused("a projected service account token would give the pod Kubernetes API credentials"),
    clusterTrustBundle: refused("projected sources are configMap, secret or downwardAPI"),
  })
  .refine(
    (source) => [source.configMap, source.secret, source.downwardAPI].filter(Boolean).length === 1,
    "a projected source needs exactly one of configMap, secret, downwardAPI",
  );

export const PolicyVolume = z
  .strictObject({
    name: dnsLabel,
    configMap: z
      .strictObject({
        name: dnsSubdomain,
        items: keyItems.optional(),
        defaultMode: fileMode.optional(),
        optional: z.boolean().optional(),
      })
      .optional(),
    secret: z
      .strictObject({
        secretName: dnsSubdomain,
        items: keyItems.optional(),
        defaultMode: fileMode.optional(),
        optional: z.boolean().optional(),
      })
      .optional(),
    emptyDir: z
      .strictObject({
        medium: z.enum(["", "Memory"]).optional(),
        sizeLimit: quantity.optional(),
      })
      .optional(),
    projected: z.strictObject({ sources: z.array(projection).max(32), defaultMode: fileMode.optional() }).optional(),
    hostPath: refused("hostPath volumes reach into the node's filesystem"),
    persistentVolumeClaim: refused(NOT_A_VOLUME_TYPE),
    downwardAPI: refused(`${NOT_A_VOLUME_TYPE} (use a projected downwardAPI source)`),
    csi: refused(NOT_A_VOLUME_TYPE),
    ephemeral: refused(NOT_A_VOLUME_TYPE),
    nfs: refused(NOT_A_VOLUME_TYPE),
    iscsi: refused(NOT_A_VOLUME_TYPE),
    image: refused(NOT_A_VOLUME_TYPE),
  })
  .refine(
    (volume) => [volume.configMap, volume.secret, volume.emptyDir, volume.projected].filter(Boolean).length === 1,
    "a volume needs exactly one of configMap, secret, emptyDir, projected",
  );

export const PolicyVolumeMount = z.strictObject({
  name: dnsLabel,
  mountPath: absolutePath,
  subPath: relativePath.optional(),
  subPathExpr: relativePath.optional(),
  // Propagation from or to the host needs host mounts (Bidirectional even a privileged container).
  mountPropagation: z.enum(["None"], { error: "only 'None' is allowed" }).optional(),
  readOnly: z.boolean().optional(),
});

// ---------------------------------------------------------------------------------------------
// Containers (sidecars and init containers)
// ---------------------------------------------------------------------------------------------

const keySelector = z.strictObject({
  name: dnsSubdomain,
  key: z.string().min(1).max(253),
  optional: z.boolean().optional(),
});

const containerEnvVar = z.strictObject({
  name: z.string().min(1).max(253),
  value: z.string().max(32_768).optional(),
  valueFrom: z
    .strictObject({
      secretKeyRef: keySelector.optional(),
      configMapKeyRef: keySelector.optional(),
      fieldRef: z.strictObject({ fieldPath: shortString, apiVersion: shortString.optional() }).optional(),
      resourceFieldRef: z
        .strictObject({ containerName: dnsLabel.optional(), resource: shortString, divisor: quantity.optional() })
        .optional(),
    })
    .optional(),
});

const envFromSource = z.strictObject({
  prefix: z.string().max(253).optional(),
  secretRef: z.strictObject({ name: dnsSubdomain, optional: z.boolean().optional() }).optional(),
  configMapRef: z.strictObject({ name: dnsSubdomain, optional: z.boolean().optional() }).optional(),
});

const NO_HOST = "a probe may only reach its own pod";
const probe = z.strictObject({
  exec: z.strictObject({ command: z.array(z.string().max(4096)).max(64) }).optional(),
  httpGet: z
    .strictObject({
      path: shortString.optional(),
      port: portRef,
      scheme: z.enum(["HTTP", "HTTPS"]).optional(),
      httpHeaders: z
        .array(z.strictObject({ name: shortString, value: shortString }))
        .max(16)
        .optional(),
      host: refused(NO_HOST),
    })
    .optional(),
  tcpSocket: z.strictObject({ port: portRef, host: refused(NO_HOST) }).optional(),
  grpc: z.strictObject({ port, service: shortString.optional() }).optional(),
  initialDelaySeconds: z.int().min(0).max(3600).optional(),
  periodSeconds: z.int().min(1).max(3600).optional(),
  timeoutSeconds: z.int().min(1).max(3600).optional(),
  successThreshold: z.int().min(1).max(100).optional(),
  failureThreshold: z.int().min(1).max(100).optional(),
  terminationGracePeriodSeconds: z.int().min(1).max(3600).optional(),
});

const resourceList = z.partialRecord(z.enum(["cpu", "memory", "ephemeral-storage"]), quantity);

/**
 * What a container may say about its privileges: only ever less than the restricted Pod Security
 * profile allows. Left unset, the secure value is filled in (`withRestrictedSecurityContext`).
 */
const securityContext = z.strictObject({
  privileged: z.literal(false, { error: "privileged containers are not allowed" }).optional(),
  allowPrivilegeEscalation: z.literal(false, { error: "privilege escalation is not allowed" }).optional(),
  runAsNonRoot: z.literal(true, { error: "containers must run as a non-root user" }).optional(),
  runAsUser: z.int().min(1, "containers must run as a non-root user").max(2_147_483_647).optional(),
  runAsGroup: z.int().min(0).max(2_147_483_647).optional(),
  readOnlyRootFilesystem: z.boolean().optional(),
  capabilities: z
    .strictObject({
      drop: z.array(z.string().min(1).max(64)).max(64).optional(),
      add: refused("containers may only drop capabilities (all are dropped)"),
    })
    .optional(),
  seccompProfile: z
    .strictObject({
      type: z.literal("RuntimeDefault", { error: "only the RuntimeDefault seccomp profile is allowed" }),
    })
    .optional(),
  procMount: refused("procMount is not allowed"),
  seLinuxOptions: refused("seLinuxOptions are not allowed"),
  appArmorProfile: refused("appArmorProfile is not allowed"),
  windowsOptions: refused("windowsOptions are not allowed"),
});

const containerFields = {
  name: dnsLabel,
  image: z.string().min(1).max(1024),
  command: z.array(z.string().max(32_768)).max(256).optional(),
  args: z.array(z.string().max(32_768)).max(256).optional(),
  workingDir: absolutePath.optional(),
  env: z.array(containerEnvVar).max(256).optional(),
  envFrom: z.array(envFromSource).max(64).optional(),
  ports: z
    .array(
      z.strictObject({
        containerPort: port,
        name: z.string().max(15).optional(),
        protocol: z.enum(["TCP", "UDP", "SCTP"]).optional(),
        hostPort: refused("host ports are not allowed"),
        hostIP: refused("host ports are not allowed"),
      }),
    )
    .max(64)
    .optional(),
  resources: z.strictObject({ requests: resourceList.optional(), limits: resourceList.optional() }).optional(),
  volumeMounts: z.array(PolicyVolumeMount).max(64).optional(),
  livenessProbe: probe.optional(),
  readinessProbe: probe.optional(),
  startupProbe: probe.optional(),
  imagePullPolicy: z.enum(["Always", "IfNotPresent", "Never"]).optional(),
  securityContext: securityContext.optional(),
  terminationMessagePath: absolutePath.optional(),
  terminationMessagePolicy: z.enum(["File", "FallbackToLogsOnError"]).optional(),
};

export const PolicySidecar = z.strictObject(containerFields);
/** Init containers may be native sidecars (`restartPolicy: Always`). */
export const PolicyInitContainer = z.strictObject({ ...containerFields, restartPolicy: z.enum(["Always"]).optional() });

/**
 * The container with the restricted profile's settings filled in where the request left them out:
 * no privilege escalation, non-root, every capability dropped, the RuntimeDefault seccomp profile.
 * (Explicit values that would loosen these never pass the schema above.)
 */
export function withRestrictedSecurityContext<C extends { securityContext?: z.infer<typeof securityContext> }>(
  container: C,
): C {
  const context = container.securityContext ?? {};
  const drop = [...new Set(["ALL", ...(context.capabilities?.drop ?? [])])];
  return {
    ...container,
    securityContext: {
      ...context,
      privileged: false,
      allowPrivilegeEscalation: false,
      runAsNonRoot: true,
      capabilities: { drop },
      seccompProfile: { type: "RuntimeDefault" },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Checks across fields
// ---------------------------------------------------------------------------------------------

/** The container the operator builds for the agent server; the volume names it adds start with this. */
const AGENT_CONTAINER = "agent-server";
interface ContainerResources {
  requests?: Partial<Record<string, string>>;
  limits?: Partial<Record<string, string>>;
}

interface PolicyContainerFields {
  name: string;
  volumeMounts?: { name: string }[];
  ports?: { name?: string }[];
  resources?: ContainerResources;
}

/** The Kubernetes-shaped part of `resource_spec` that the cross-field rules read. */
export interface PodFields {
  min_scale?: number | null;
  max_scale?: number | null;
  cpu?: number | null;
  cpu_limit?: number | null;
  memory_mb?: number | null;
  memory_limit_mb?: number | null;
  labels?: Record<string, string> | null;
  annotations?: Record<string, string> | null;
  volumes?: { name: string }[] | null;
  volume_mounts?: { name: string }[] | null;
  sidecars?: PolicyContainerFields[] | null;
  init_containers?: (PolicyContainerFields & { restartPolicy?: string })[] | null;
}

type Loc = (string | number)[];

const issue = (loc: Loc, msg: string, type = "value_error"): ValidationIssue => ({ loc, msg, type });

/**
 * The rules that span fields of a parsed `resource_spec` (at `loc`): platform-owned label and
 * annotation keys, unique names that do not clash with the agent server's, and mounts of declared
 * volumes only.
 */
export function podFieldIssues(spec: PodFields, loc: Loc): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const field of ["labels", "annotations"] as const) {
    for (const key of Object.keys(spec[field] ?? {})) {
      if (isReservedMetadataKey(key)) {
        issues.push(issue([...loc, field, key], `keys under ${RESERVED_METADATA_DOMAINS.join(", ")} are reserved`));
      }
    }
  }
  const volumeNames = new Set<string>();
  (spec.volumes ?? []).forEach((volume, index) => {
    if (volume.name.startsWith(RESERVED_NAME_PREFIX)) {
      issues.push(
        issue([...loc, "volumes", index, "name"], `volume names starting '${RESERVED_NAME_PREFIX}' are reserved`),
      );
    } else if (volumeNames.has(volume.name)) {
      issues.push(issue([...loc, "volumes", index, "name"], "volume names must be unique"));
    }
    volumeNames.add(volume.name);
  });
  const checkMounts = (mounts: { name: string }[] | undefined | null, at: Loc) => {
    (mounts ?? []).forEach((mount, index) => {
      if (!volumeNames.has(mount.name)) {
        issues.push(issue([...at, index, "name"], `no volume named '${mount.name}' in resource_spec.volumes`));
      }
    });
  };
  checkMounts(spec.volume_mounts, [...loc, "volume_mounts"]);
  const containerNames = new Set([AGENT_CONTAINER]);
  for (const field of ["init_containers", "sidecars"] as const) {
    (spec[field] ?? []).forEach((container, index) => {
      if (containerNames.has(container.name)) {
        issues.push(issue([...loc, field, index, "name"], `container name '${container.name}' is already taken`));
      }
      containerNames.add(container.name);
      checkMounts(container.volumeMounts, [...loc, field, index, "volumeMounts"]);
      issues.push(...containerIssues(container, [...loc, field, index]));
    });
  }
  issues.push(...resourceIssues(spec, loc));
  return issues;
}

const QUANTITY_SCALE: Record<string, number> = {
  "": 1,
  m: 1e-3,
  k: 1e3,
  K: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** A quantity the schema accepted, as a number (to compare a request with its limit). */
function quantityValue(quantity: string): number {
  const match = /^([0-9.]+)(?:[eE]([0-9]+)|([a-zA-Z]*))$/.exec(quantity);
  if (!match) return Number.NaN;
  return Number(match[1]) * (match[2] ? 10 ** Number(match[2]) : (QUANTITY_SCALE[match[3] ?? ""] ?? Number.NaN));
}

/**
 * What Kubernetes itself refuses in a container (pkg/apis/core/validation), checked here so the user
 * gets a 422 naming the field instead of a revision that fails later: port names are IANA service
 * names (a Service's targetPort refers to them), and no request exceeds its limit.
 */
function containerIssues(container: PolicyContainerFields, at: Loc): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  (container.ports ?? []).forEach((port, index) => {
    const name = port.name;
    if (name === undefined || name === "") return;
    const valid = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name) && /[a-z]/.test(name) && !name.includes("--");
    if (!valid || name.length > 15) {
      issues.push(
        issue(
          [...at, "ports", index, "name"],
          "must be an IANA service name: at most 15 lowercase letters, digits and single hyphens, with a letter, not starting or ending with a hyphen",
        ),
      );
    }
  });
  const limits = container.resources?.limits ?? {};
  for (const [resource, request] of Object.entries(container.resources?.requests ?? {})) {
    const limit = limits[resource];
    if (request === undefined || limit === undefined) continue;
    if (quantityValue(request) > quantityValue(limit)) {
      issues.push(
        issue(
          [...at, "resources", "requests", resource],
          `must be less than or equal to the ${resource} limit (${limit})`,
        ),
      );
    }
  }
  return issues;
}

/** Whether the operator gives the deployment an autoscaler (its rule: more than one replica possible). */
function autoscales(spec: PodFields): boolean {
  return spec.max_scale != null && spec.max_scale > Math.max(1, spec.min_scale ?? 1);
}

/**
 * The agent server's own limits may not be below its requests (Kubernetes refuses the pod template),
 * and autoscaling needs a CPU request on every container: the autoscaler scales on CPU utilization
 * (usage / request) and, missing one request, reports "missing request for cpu" and never scales.
 */
function resourceIssues(spec: PodFields, loc: Loc): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (spec.cpu != null && spec.cpu_limit != null && spec.cpu_limit < spec.cpu) {
    issues.push(
      issue([...loc, "cpu_limit"], `must be at least cpu (${spec.cpu}): a limit below the request is refused`),
    );
  }
  if (spec.memory_mb != null && spec.memory_limit_mb != null && spec.memory_limit_mb < spec.memory_mb) {
    issues.push(
      issue(
        [...loc, "memory_limit_mb"],
        `must be at least memory_mb (${spec.memory_mb}): a limit below the request is refused`,
      ),
    );
  }
  if (!autoscales(spec)) return issues;
  const why = "is required when max_scale exceeds min_scale: the autoscaler scales on CPU utilization of the request";
  if (spec.cpu == null && spec.cpu_limit == null) issues.push(issue([...loc, "cpu"], why));
  (spec.sidecars ?? []).forEach((sidecar, index) => {
    const resources = sidecar.resources;
    if (resources?.requests?.cpu === undefined && resources?.limits?.cpu === undefined) {
      issues.push(issue([...loc, "sidecars", index, "resources", "requests", "cpu"], why));
    }
  });
  return issues;
}

// ---------------------------------------------------------------------------------------------
// Objects referenced by name
// ---------------------------------------------------------------------------------------------

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
  const env = (container.env ?? []) as z.infer<typeof containerEnvVar>[];
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
  const envFrom = (container.envFrom ?? []) as z.infer<typeof envFromSource>[];
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
  const volumes = (resources?.volumes ?? []) as z.infer<typeof PolicyVolume>[];
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
  return issue(
    ref.loc,
    `${ref.kind} '${ref.name}' is not shared with this workspace (an administrator shares it with the annotation ${SHARED_WITH_ANNOTATION})`,
    "reference_not_allowed",
  );
}
