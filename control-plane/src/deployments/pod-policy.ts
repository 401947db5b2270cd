import { isReservedEnvName } from "@agentplane/crds";
import { z } from "zod";

/**
 * What a deployment may put into its pods: an allow-list in the manner of Knative Serving's pod-spec
 * validation. Every Kubernetes-shaped field a tenant sends (volumes, sidecars, init containers) is a
 * strict schema here, so a field not listed is refused with 422 naming it (and a deeply nested value
 * never gets further than the first unknown key); the checks that span fields are pure functions
 * over the parsed request (pod-rules.ts). Objects a deployment refers to by name (Secrets, ConfigMaps,
 * a ServiceAccount) are collected by pod-references.ts and checked against the cluster by the service.
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

/** An environment entry and an envFrom source as the schema accepts them (read by pod-references.ts). */
export type PolicyEnvVar = z.infer<typeof containerEnvVar>;
export type PolicyEnvFromSource = z.infer<typeof envFromSource>;
export type PolicyVolumeSpec = z.infer<typeof PolicyVolume>;
