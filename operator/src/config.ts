import { hostname } from "node:os";
import { z } from "zod";
import { type BuildSettings, defaultBuildSettings } from "./build/settings.ts";

export interface OperatorSettings {
  /** Namespace to watch; undefined = all namespaces. */
  watchNamespace: string | undefined;
  leaderElection: boolean;
  leaseNamespace: string;
  leaseName: string;
  identity: string;
  /** client-go semantics: lease duration > renew deadline > 1.2 × retry period. */
  lease: { durationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
  workers: number;
  resyncMs: number;
  pollMs: number;
  healthPort: number;
  healthHost: string;
  build: BuildSettings;
}

const integer = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const EnvSchema = z.object({
  WATCH_NAMESPACE: z.string().min(1).optional(),
  LEADER_ELECTION: z.enum(["true", "false"]).default("true"),
  OPERATOR_NAMESPACE: z.string().min(1).default("default"),
  LEASE_NAME: z.string().min(1).default("agentplane-operator"),
  POD_NAME: z.string().min(1).optional(),
  LEASE_DURATION_SECONDS: z.coerce.number().positive().default(15),
  LEASE_RENEW_DEADLINE_SECONDS: z.coerce.number().positive().default(10),
  LEASE_RETRY_PERIOD_SECONDS: z.coerce.number().positive().default(2),
  WORKERS: integer(1, 64).default(4),
  RESYNC_SECONDS: integer(1, 86_400).default(300),
  POLL_SECONDS: integer(1, 3600).default(10),
  HEALTH_PORT: integer(0, 65_535).default(8081),
  HEALTH_HOST: z.string().min(1).default("0.0.0.0"),
  AGENT_PORT: integer(1, 65_535).default(defaultBuildSettings.agentPort),
  AGENT_SERVICE_TYPE: z.enum(["ClusterIP", "LoadBalancer"]).default(defaultBuildSettings.serviceType),
  CLUSTER_DOMAIN: z.string().min(1).default(defaultBuildSettings.clusterDomain),
  REDIS_IMAGE: z.string().min(1).default(defaultBuildSettings.redisImage),
  REDIS_STORAGE: z.string().min(1).default(defaultBuildSettings.redisStorage),
  REDIS_STORAGE_CLASS: z.string().min(1).optional(),
  PROGRESS_DEADLINE_SECONDS: integer(10, 86_400).default(defaultBuildSettings.progressDeadlineSeconds),
  TARGET_CPU_UTILIZATION: integer(1, 100).default(defaultBuildSettings.targetCpuUtilization),
  /** JSON list of NetworkPolicyPeers admitted to the agent servers (the ingress path). */
  AGENT_INGRESS_FROM: z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "not JSON" });
        return z.NEVER;
      }
    })
    .pipe(z.array(z.record(z.string(), z.unknown())))
    .optional(),
});

/** Reads the operator's settings from the environment; throws a readable error listing every bad variable. */
export function settingsFromEnv(env: NodeJS.ProcessEnv): OperatorSettings {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new Error(`invalid operator configuration: ${problems}`);
  }
  const e = parsed.data;
  return {
    watchNamespace: e.WATCH_NAMESPACE,
    leaderElection: e.LEADER_ELECTION === "true",
    leaseNamespace: e.OPERATOR_NAMESPACE,
    leaseName: e.LEASE_NAME,
    identity: `${e.POD_NAME ?? hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
    lease: {
      durationMs: e.LEASE_DURATION_SECONDS * 1000,
      renewDeadlineMs: e.LEASE_RENEW_DEADLINE_SECONDS * 1000,
      retryPeriodMs: e.LEASE_RETRY_PERIOD_SECONDS * 1000,
    },
    workers: e.WORKERS,
    resyncMs: e.RESYNC_SECONDS * 1000,
    pollMs: e.POLL_SECONDS * 1000,
    healthPort: e.HEALTH_PORT,
    healthHost: e.HEALTH_HOST,
    build: {
      agentPort: e.AGENT_PORT,
      serviceType: e.AGENT_SERVICE_TYPE,
      clusterDomain: e.CLUSTER_DOMAIN,
      redisImage: e.REDIS_IMAGE,
      redisStorage: e.REDIS_STORAGE,
      ...(e.REDIS_STORAGE_CLASS ? { redisStorageClassName: e.REDIS_STORAGE_CLASS } : {}),
      progressDeadlineSeconds: e.PROGRESS_DEADLINE_SECONDS,
      targetCpuUtilization: e.TARGET_CPU_UTILIZATION,
      agentIngressFrom: e.AGENT_INGRESS_FROM ?? defaultBuildSettings.agentIngressFrom,
    },
  };
}
