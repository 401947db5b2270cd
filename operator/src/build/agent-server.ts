import { type AgentDeployment, type AgentRevision, API_KEY_HASHES_KEY, type Resources } from "@agentplane/crds";
import {
  agentName,
  childLabels,
  childMetadata,
  nameOf,
  REVISION_ANNOTATION,
  REVISION_LABEL,
  redisName,
  selectorLabels,
} from "./names.ts";
import { hardenedContainer, hardenedSecurityContext } from "./pod-policy.ts";
import { REDIS_PASSWORD_KEY, REDIS_PORT, redisSecretName } from "./redis.ts";
import type { BuildSettings } from "./settings.ts";

export const AGENT_CONTAINER = "agent-server";
const API_KEYS_VOLUME = "agentplane-api-keys";
const API_KEYS_DIR = "/etc/agentplane/api-keys";
const NON_ROOT_UID = 1000;
/** Holds the managed Redis password inside the agent container only; REDIS_URI refers to it. */
export const REDIS_PASSWORD_ENV = "AGENTPLANE_REDIS_PASSWORD";

/** Replicas of the Deployment itself; undefined while an autoscaler owns the count. */
export function fixedReplicas(resources: Resources | undefined): number | undefined {
  return hasAutoscaler(resources) ? undefined : minReplicas(resources);
}

export function minReplicas(resources: Resources | undefined): number {
  return resources?.minScale ?? 1;
}

/**
 * An autoscaler only when more than one replica is allowed and every container has a CPU request (a
 * limit alone defaults the request): the HPA scales on CPU utilization, and with one request missing
 * it reports "missing request for cpu" and never scales. The control plane refuses such a spec; one
 * written past it runs at its minimum scale instead.
 */
export function hasAutoscaler(resources: Resources | undefined): boolean {
  const min = Math.max(1, minReplicas(resources));
  if (resources?.maxScale === undefined || resources.maxScale <= min) return false;
  const agentCpu = resources.cpu !== undefined || resources.cpuLimit !== undefined;
  const sidecarsCpu = (resources.sidecars ?? []).every((sidecar) => {
    const declared = (sidecar as { resources?: { requests?: { cpu?: unknown }; limits?: { cpu?: unknown } } })
      .resources;
    return declared?.requests?.cpu !== undefined || declared?.limits?.cpu !== undefined;
  });
  return agentCpu && sidecarsCpu;
}

/**
 * REDIS_URI (and what it refers to). The managed Redis password comes from its Secret through a
 * `secretKeyRef` and is spliced into the URI by the kubelet's `$(VAR)` expansion, so the pod spec
 * never holds it in clear.
 */
export function redisUrlEnv(agd: AgentDeployment, settings: BuildSettings): object[] {
  const external = agd.spec.redis?.externalUrlSecretRef;
  if (external) {
    return [{ name: "REDIS_URI", valueFrom: { secretKeyRef: { name: external.name, key: external.key } } }];
  }
  const host = `${redisName(agd)}.${agd.metadata.namespace}.svc.${settings.clusterDomain}`;
  return [
    {
      name: REDIS_PASSWORD_ENV,
      valueFrom: { secretKeyRef: { name: redisSecretName(agd), key: REDIS_PASSWORD_KEY } },
    },
    { name: "REDIS_URI", value: `redis://:$(${REDIS_PASSWORD_ENV})@${host}:${REDIS_PORT}` },
  ];
}

function containerResources(resources: Resources | undefined) {
  const requests: Record<string, string> = {};
  const limits: Record<string, string> = {};
  if (resources?.cpu !== undefined) requests.cpu = `${Math.round(resources.cpu * 1000)}m`;
  if (resources?.memoryMb !== undefined) requests.memory = `${resources.memoryMb}Mi`;
  if (resources?.cpuLimit !== undefined) limits.cpu = `${Math.round(resources.cpuLimit * 1000)}m`;
  if (resources?.memoryLimitMb !== undefined) limits.memory = `${resources.memoryLimitMb}Mi`;
  return { requests, limits };
}

/**
 * The server answers `/ok` as soon as it listens, before its storage connects (a Redis that comes up
 * late must not get it killed by liveness); `/ok?check_db=1` also pings storage, so readiness stays
 * false until Redis answers, and goes false again while Redis does not.
 */
function probe(settings: BuildSettings, path: string, periodSeconds: number, failureThreshold: number) {
  return { httpGet: { path, port: settings.agentPort }, periodSeconds, failureThreshold, timeoutSeconds: 3 };
}

/** The agent-server Deployment serving `revision`: one ReplicaSet per revision via the pod-template stamp. */
export function buildAgentDeployment(agd: AgentDeployment, revision: AgentRevision, settings: BuildSettings) {
  const template = revision.spec.template;
  const resources = template.resources;
  const apiKeysSecret = agd.spec.apiKeysSecretName;
  const revisionId = nameOf(revision);
  const env: object[] = (template.secretReferences ?? []).map((ref) => ({
    name: ref.name,
    valueFrom: { secretKeyRef: { name: ref.secretName, key: ref.secretKey } },
  }));
  // The server's own settings, after everything the tenant supplies: an explicit `env` entry beats a
  // key of the same name in the `envFrom` Secret, whose keys the operator cannot see.
  env.push(
    { name: "PORT", value: String(settings.agentPort) },
    { name: "HOST", value: "0.0.0.0" },
    ...redisUrlEnv(agd, settings),
    { name: "REDIS_PREFIX", value: "agentplane:" },
    { name: "AGENTPLANE_API_KEYS", value: "" },
    { name: "AGENTPLANE_API_KEYS_FILE", value: apiKeysSecret ? `${API_KEYS_DIR}/${API_KEY_HASHES_KEY}` : "" },
    { name: "NODE_OPTIONS", value: "" },
  );
  const volumeMounts: object[] = [...(resources?.volumeMounts ?? [])];
  const volumes: object[] = [...(resources?.volumes ?? [])];
  if (apiKeysSecret) {
    volumeMounts.push({ name: API_KEYS_VOLUME, mountPath: API_KEYS_DIR, readOnly: true });
    volumes.push({
      name: API_KEYS_VOLUME,
      secret: { secretName: apiKeysSecret, items: [{ key: API_KEY_HASHES_KEY, path: API_KEY_HASHES_KEY }] },
    });
  }
  const container = {
    name: AGENT_CONTAINER,
    image: template.image,
    ports: [{ name: "http", containerPort: settings.agentPort, protocol: "TCP" }],
    env,
    ...(template.secretName ? { envFrom: [{ secretRef: { name: template.secretName } }] } : {}),
    resources: containerResources(resources),
    readinessProbe: probe(settings, "/ok?check_db=1", 5, 3),
    livenessProbe: { ...probe(settings, "/ok", 10, 6), initialDelaySeconds: 10 },
    volumeMounts,
    securityContext: hardenedSecurityContext(),
  };
  const replicas = fixedReplicas(resources);
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: {
      ...childMetadata(agd, agentName(agd), "agent-server"),
      annotations: { [REVISION_ANNOTATION]: revisionId },
    },
    spec: {
      ...(replicas === undefined ? {} : { replicas }),
      revisionHistoryLimit: 5,
      progressDeadlineSeconds: settings.progressDeadlineSeconds,
      selector: { matchLabels: selectorLabels(agd, "agent-server") },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: {
          labels: { ...resources?.labels, ...childLabels(agd, "agent-server"), [REVISION_LABEL]: revisionId },
          annotations: { ...resources?.annotations, [REVISION_ANNOTATION]: revisionId },
        },
        spec: {
          // No API token for tenant code. A ServiceAccount is named only when an administrator shared
          // it with the workspace (the pod policy checks that): it can carry image-pull Secrets or a
          // cloud identity binding, never a Kubernetes token.
          automountServiceAccountToken: false,
          ...(resources?.serviceAccountName ? { serviceAccountName: resources.serviceAccountName } : {}),
          ...(resources?.imagePullSecrets?.length ? { imagePullSecrets: resources.imagePullSecrets } : {}),
          enableServiceLinks: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: NON_ROOT_UID,
            runAsGroup: NON_ROOT_UID,
            fsGroup: NON_ROOT_UID,
            seccompProfile: { type: "RuntimeDefault" },
          },
          ...(resources?.initContainers?.length
            ? { initContainers: resources.initContainers.map(hardenedContainer) }
            : {}),
          containers: [container, ...(resources?.sidecars ?? []).map(hardenedContainer)],
          volumes,
        },
      },
    },
  };
}

export function buildAgentService(agd: AgentDeployment, settings: BuildSettings) {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: childMetadata(agd, agentName(agd), "agent-server"),
    spec: {
      type: settings.serviceType,
      selector: selectorLabels(agd, "agent-server"),
      ports: [{ name: "http", port: settings.agentPort, targetPort: "http", protocol: "TCP" }],
    },
  };
}

export function buildAutoscaler(agd: AgentDeployment, revision: AgentRevision, settings: BuildSettings) {
  const resources = revision.spec.template.resources;
  if (!hasAutoscaler(resources)) return undefined;
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: childMetadata(agd, agentName(agd), "agent-server"),
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: agentName(agd) },
      minReplicas: Math.max(1, minReplicas(resources)),
      maxReplicas: resources?.maxScale,
      metrics: [
        {
          type: "Resource",
          resource: { name: "cpu", target: { type: "Utilization", averageUtilization: settings.targetCpuUtilization } },
        },
      ],
    },
  };
}
