import { randomBytes } from "node:crypto";
import type { AgentDeployment } from "@agentplane/crds";
import { childLabels, childMetadata, redisName, selectorLabels } from "./names.ts";
import { hardenedContainer } from "./pod-policy.ts";
import type { BuildSettings } from "./settings.ts";

const REDIS_UID = 999;
export const REDIS_PORT = 6379;
export const REDIS_DATA_VOLUME = "data";
const REDIS_CONFIG_VOLUME = "config";
export const REDIS_CONFIG_DIR = "/etc/redis";
/** Keys of the password Secret: the bare password (clients) and a config file holding it (the server). */
export const REDIS_PASSWORD_KEY = "password";
export const REDIS_CONFIG_KEY = "redis.conf";
const REDIS_CPU_REQUEST = "100m";
const REDIS_MEMORY_REQUEST = "256Mi";
const REDIS_MEMORY_LIMIT = "1Gi";

/** Managed Redis = none when the spec names an external Redis URL Secret. */
export function managesRedis(agd: AgentDeployment): boolean {
  return agd.spec.redis?.externalUrlSecretRef === undefined;
}

/** The Secret holding the managed Redis password: same name as the StatefulSet (another kind). */
export function redisSecretName(agd: AgentDeployment): string {
  return redisName(agd);
}

const base64 = (text: string) => Buffer.from(text).toString("base64");

/** 256 random bits as hex: URL-safe, so it goes into `redis://:<password>@host` unescaped. */
export function generateRedisPassword(): string {
  return randomBytes(32).toString("hex");
}

/**
 * The managed Redis password, created once and never rewritten (a new password would lock out the
 * running agent servers until they restart). The server reads it from a config file rather than
 * `--requirepass`, so it shows in no process list; the agent server gets it through an env
 * `secretKeyRef`, so it is in no pod spec.
 */
export function buildRedisSecret(agd: AgentDeployment, password: string) {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: childMetadata(agd, redisSecretName(agd), "redis"),
    type: "Opaque",
    data: {
      [REDIS_PASSWORD_KEY]: base64(password),
      [REDIS_CONFIG_KEY]: base64(`requirepass ${password}\n`),
    },
  };
}

/**
 * One-replica Redis with an append-only file on a persistent volume. Protected mode stays on: it only
 * restricts a Redis without a password, and this one always has one.
 */
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
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: REDIS_UID,
            runAsGroup: REDIS_UID,
            fsGroup: REDIS_UID,
            seccompProfile: { type: "RuntimeDefault" },
          },
          containers: [
            hardenedContainer({
              name: "redis",
              image: settings.redisImage,
              args: [
                "redis-server",
                `${REDIS_CONFIG_DIR}/${REDIS_CONFIG_KEY}`,
                "--appendonly",
                "yes",
                "--dir",
                "/data",
              ],
              // redis-cli reads REDISCLI_AUTH, so the probe authenticates without a password argument.
              env: [
                {
                  name: "REDISCLI_AUTH",
                  valueFrom: { secretKeyRef: { name: redisSecretName(agd), key: REDIS_PASSWORD_KEY } },
                },
              ],
              ports: [{ name: "redis", containerPort: REDIS_PORT, protocol: "TCP" }],
              // Requests so the scheduler reserves room (and a quota counts it); a memory limit so a
              // runaway Redis is OOM-killed (and reported as crash-looping) rather than the node's
              // other pods; no CPU limit, whose throttling would stall every agent server's commands.
              resources: {
                requests: { cpu: REDIS_CPU_REQUEST, memory: REDIS_MEMORY_REQUEST },
                limits: { memory: REDIS_MEMORY_LIMIT },
              },
              // Liveness waits for the port to open, up to a minute, instead of a fixed initial delay
              // that a slow volume mount or a large append-only file outlasts.
              startupProbe: { tcpSocket: { port: "redis" }, periodSeconds: 2, failureThreshold: 30 },
              readinessProbe: { exec: { command: ["redis-cli", "ping"] }, periodSeconds: 5 },
              livenessProbe: { tcpSocket: { port: "redis" }, periodSeconds: 10 },
              volumeMounts: [
                { name: REDIS_DATA_VOLUME, mountPath: "/data" },
                { name: REDIS_CONFIG_VOLUME, mountPath: REDIS_CONFIG_DIR, readOnly: true },
              ],
            }),
          ],
          volumes: [
            {
              name: REDIS_CONFIG_VOLUME,
              secret: {
                secretName: redisSecretName(agd),
                items: [{ key: REDIS_CONFIG_KEY, path: REDIS_CONFIG_KEY }],
                // Owner root, group fsGroup (the Redis user): readable by Redis and nobody else.
                defaultMode: 0o440,
              },
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
      ports: [{ name: "redis", port: REDIS_PORT, targetPort: "redis", protocol: "TCP" }],
    },
  };
}
