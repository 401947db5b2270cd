import { createHash } from "node:crypto";
import type { AgentDeployment, AgentRevision } from "@agentplane/crds";
import type { KubeObject } from "../kube/client.ts";
import { buildAgentDeployment, buildAgentService, buildAutoscaler } from "./agent-server.ts";
import { SPEC_HASH_ANNOTATION } from "./names.ts";
import { buildAgentNetworkPolicy, buildRedisNetworkPolicy } from "./network-policy.ts";
import {
  buildRedisSecret,
  buildRedisService,
  buildRedisStatefulSet,
  generateRedisPassword,
  managesRedis,
  redisSecretName,
} from "./redis.ts";
import type { BuildSettings } from "./settings.ts";

export interface ChildRef {
  apiVersion: string;
  kind: string;
  name: string;
}

export interface DesiredChildren {
  /**
   * Objects created when missing and never rewritten, because their content is random (the managed
   * Redis password): `build` is called only when the object is about to be created. Created before
   * anything in `apply`, whose pods read them.
   */
  createOnce: (ChildRef & { build: () => KubeObject })[];
  /** Objects to apply, each stamped with the hash of its own intent. */
  apply: KubeObject[];
  /** Kinds this deployment may have made before but must not have now (e.g. the HPA after max scale drops). */
  absent: ChildRef[];
}

/** Stable hash of an intent (key order independent), stamped on the child so unchanged children are skipped. */
export function intentHash(obj: unknown): string {
  return createHash("sha256").update(canonicalJson(obj)).digest("hex").slice(0, 32);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

function stamped(obj: KubeObject): KubeObject {
  const hash = intentHash(obj);
  const annotations = { ...obj.metadata?.annotations, [SPEC_HASH_ANNOTATION]: hash };
  return { ...obj, metadata: { ...obj.metadata, annotations } };
}

/** Everything an AgentDeployment serving `revision` should own, as pure data. */
export function desiredChildren(
  agd: AgentDeployment,
  revision: AgentRevision,
  settings: BuildSettings,
): DesiredChildren {
  const createOnce: DesiredChildren["createOnce"] = [];
  const apply: KubeObject[] = [];
  const absent: DesiredChildren["absent"] = [];
  const ref = (obj: { apiVersion: string; kind: string; metadata: { name: string } }): ChildRef => ({
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    name: obj.metadata.name,
  });
  const redis = [buildRedisStatefulSet(agd, settings), buildRedisService(agd), buildRedisNetworkPolicy(agd)];
  const secret = { apiVersion: "v1", kind: "Secret", name: redisSecretName(agd) };
  if (managesRedis(agd)) {
    createOnce.push({ ...secret, build: () => buildRedisSecret(agd, generateRedisPassword()) });
    apply.push(...redis.map(stamped));
  } else {
    absent.push(...redis.map(ref), secret);
  }
  const deployment = buildAgentDeployment(agd, revision, settings);
  apply.push(
    stamped(deployment),
    stamped(buildAgentService(agd, settings)),
    stamped(buildAgentNetworkPolicy(agd, settings)),
  );
  const autoscaler = buildAutoscaler(agd, revision, settings);
  if (autoscaler) apply.push(stamped(autoscaler));
  else absent.push({ apiVersion: "autoscaling/v2", kind: "HorizontalPodAutoscaler", name: deployment.metadata.name });
  return { createOnce, apply, absent };
}
