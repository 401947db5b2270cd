import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { describe, expect, it } from "vitest";
import { agentDeployment, agentRevision } from "../testing/fixtures.ts";
import { desiredChildren, intentHash } from "./children.ts";
import { SPEC_HASH_ANNOTATION } from "./names.ts";
import { buildRedisStatefulSet } from "./redis.ts";
import { defaultBuildSettings as settings } from "./settings.ts";

type Json = any;
const external = { externalUrlSecretRef: { name: "redis-url", key: "url" } };

describe("desiredChildren", () => {
  it.each([
    [
      "managed Redis, fixed replicas",
      {},
      {},
      ["StatefulSet", "Service", "Deployment", "Service"],
      ["HorizontalPodAutoscaler"],
    ],
    [
      "managed Redis, autoscaled",
      {},
      { minScale: 1, maxScale: 5 },
      ["StatefulSet", "Service", "Deployment", "Service", "HorizontalPodAutoscaler"],
      [],
    ],
    [
      "external Redis, fixed replicas",
      { redis: external },
      {},
      ["Deployment", "Service"],
      ["StatefulSet", "Service", "HorizontalPodAutoscaler"],
    ],
  ])("%s", (_what, spec, resources, applied, absent) => {
    const children = desiredChildren(agentDeployment(spec), agentRevision({ resources }), settings);
    expect(children.apply.map((c) => c.kind)).toEqual(applied);
    expect(children.absent.map((c) => c.kind)).toEqual(absent);
    for (const child of children.apply) {
      expect(child.metadata?.annotations?.[SPEC_HASH_ANNOTATION]).toMatch(/^[0-9a-f]{32}$/);
      expect(child.metadata?.ownerReferences?.[0]?.uid).toBe("uid-agd");
    }
  });

  it("stamps the same hash for the same intent and a new one when the revision changes", () => {
    const hashes = (image: string) =>
      desiredChildren(agentDeployment(), agentRevision({ image }, { name: `rev-${image}` }), settings).apply.map(
        (c) => c.metadata?.annotations?.[SPEC_HASH_ANNOTATION],
      );
    expect(hashes("a")).toEqual(hashes("a"));
    const [redisA, , deploymentA, serviceA] = hashes("a");
    const [redisB, , deploymentB, serviceB] = hashes("b");
    expect(deploymentB).not.toBe(deploymentA);
    expect([redisB, serviceB]).toEqual([redisA, serviceA]);
  });

  it("hashes independently of key order", () => {
    expect(intentHash({ a: 1, b: { c: [1, 2], d: "x" } })).toBe(intentHash({ b: { d: "x", c: [1, 2] }, a: 1 }));
    expect(intentHash({ a: [1, 2] })).not.toBe(intentHash({ a: [2, 1] }));
  });
});

describe("buildRedisStatefulSet", () => {
  const sts: Json = buildRedisStatefulSet(agentDeployment(), settings);

  it("is a valid StatefulSet with append-only persistence on a claimed volume", () => {
    expect(() => new StatefulSet(sts).validate()).not.toThrow();
    expect(sts.spec.template.spec.containers[0].args).toEqual(expect.arrayContaining(["--appendonly", "yes"]));
    expect(sts.spec.volumeClaimTemplates[0].spec.resources.requests.storage).toBe("1Gi");
    expect(sts.spec.template.spec.containers[0].volumeMounts[0].mountPath).toBe("/data");
    expect(sts.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
  });
});
