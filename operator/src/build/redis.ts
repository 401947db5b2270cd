import type { AgentDeployment } from "@agentplane/crds";
import { childLabels, childMetadata, redisName, selectorLabels } from "./names.ts";
import type { BuildSettings } from "./settings.ts";

const REDIS_UID = 999;
export const REDIS_DATA_VOLUME = "data";

/** Managed Redis = none when the spec names an external Redis URL Secret. */
export function managesRedis(agd: AgentDeployment): boolean {
  return agd.spec.redis?.externalUrlSecretRef === undefined;
}

/** One-replica Redis with an append-only file on a persistent volume. */
export function buildRedisStatefulSet(agd: AgentDeployment, settings: BuildSettings) {
  const name = redisName(agd);
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: childMetadata(agd, name, "redis"),
    spec: {
      serviceName: name,
      replicas: 1,
      selector: { matchLabels: selectorLabels(agd, "redis") },
      persistentVolumeClaimRetentionPolicy: { whenDeleted: "Delete", whenScaled: "Retain" },
      template: {
        metadata: { labels: childLabels(agd, "redis") },
        spec: {
          enableServiceLinks: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: REDIS_UID,
            runAsGroup: REDIS_UID,
            fsGroup: REDIS_UID,
            seccompProfile: { type: "RuntimeDefault" },
          },
          containers: [
            {
              name: "redis",
              image: settings.redisImage,
              args: ["redis-server", "--appendonly", "yes", "--dir", "/data", "--protected-mode", "no"],
              ports: [{ name: "redis", containerPort: 6379, protocol: "TCP" }],
              readinessProbe: { exec: { command: ["redis-cli", "ping"] }, periodSeconds: 5 },
              livenessProbe: { tcpSocket: { port: "redis" }, periodSeconds: 10, initialDelaySeconds: 10 },
              volumeMounts: [{ name: REDIS_DATA_VOLUME, mountPath: "/data" }],
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
            },
          ],
        },
      },
      volumeClaimTemplates: [
        {
          apiVersion: "v1",
          kind: "PersistentVolumeClaim",
          metadata: { name: REDIS_DATA_VOLUME, labels: childLabels(agd, "redis") },
          spec: {
            accessModes: ["ReadWriteOnce"],
            ...(settings.redisStorageClassName ? { storageClassName: settings.redisStorageClassName } : {}),
            resources: { requests: { storage: settings.redisStorage } },
          },
        },
      ],
    },
  };
}

/** Headless Service giving the StatefulSet's pod its stable DNS name. */
export function buildRedisService(agd: AgentDeployment) {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: childMetadata(agd, redisName(agd), "redis"),
    spec: {
      clusterIP: "None",
      selector: selectorLabels(agd, "redis"),
      ports: [{ name: "redis", port: 6379, targetPort: "redis", protocol: "TCP" }],
    },
  };
}
