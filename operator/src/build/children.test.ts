import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { Secret } from "kubernetes-models/v1/Secret";
import { describe, expect, it } from "vitest";
import { agentDeployment, agentRevision, DEPLOYMENT_ID } from "../testing/fixtures.ts";
import { buildAgentDeployment } from "./agent-server.ts";
import { desiredChildren, intentHash } from "./children.ts";
import { SPEC_HASH_ANNOTATION } from "./names.ts";
import { buildAgentNetworkPolicy, buildRedisNetworkPolicy } from "./network-policy.ts";
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
      ["Secret"],
      ["StatefulSet", "Service", "NetworkPolicy", "Deployment", "Service", "NetworkPolicy"],
      ["HorizontalPodAutoscaler"],
    ],
    [
      "managed Redis, autoscaled",
      {},
      { minScale: 1, maxScale: 5, cpu: 0.5 },
      ["Secret"],
      ["StatefulSet", "Service", "NetworkPolicy", "Deployment", "Service", "NetworkPolicy", "HorizontalPodAutoscaler"],
      [],
    ],
    [
      "external Redis, fixed replicas",
      { redis: external },
      {},
      [],
      ["Deployment", "Service", "NetworkPolicy"],
      ["StatefulSet", "Service", "NetworkPolicy", "Secret", "HorizontalPodAutoscaler"],
    ],
  ])("%s", (_what, spec, resources, created, applied, absent) => {
    const children = desiredChildren(agentDeployment(spec), agentRevision({ resources }), settings);
    expect(children.createOnce.map((c) => c.kind)).toEqual(created);
    expect(children.apply.map((c) => c.kind)).toEqual(applied);
    expect(children.absent.map((c) => c.kind)).toEqual(absent);
    for (const child of children.apply) {
      expect(child.metadata?.annotations?.[SPEC_HASH_ANNOTATION]).toMatch(/^[0-9a-f]{32}$/);
      expect(child.metadata?.ownerReferences?.[0]?.uid).toBe("uid-agd");
    }
  });

  it("stamps the same hash for the same intent and a new one when the revision changes", () => {
    const hashes = (image: string) =>
      Object.fromEntries(
        desiredChildren(agentDeployment(), agentRevision({ image }, { name: `rev-${image}` }), settings).apply.map(
          (c) => [`${c.kind}/${c.metadata?.name}`, c.metadata?.annotations?.[SPEC_HASH_ANNOTATION]],
        ),
      );
    expect(hashes("a")).toEqual(hashes("a"));
    const [a, b] = [hashes("a"), hashes("b")];
    const deployment = `Deployment/agent-${DEPLOYMENT_ID}`;
    expect(b[deployment]).not.toBe(a[deployment]);
    expect({ ...b, [deployment]: "" }).toEqual({ ...a, [deployment]: "" });
  });

  it("generates the Redis password only when the Secret is about to be created, a new one each time", () => {
    const [secret] = desiredChildren(agentDeployment(), agentRevision(), settings).createOnce;
    const decoded = (obj: Json) =>
      Object.fromEntries(Object.entries(obj.data).map(([k, v]) => [k, Buffer.from(v as string, "base64").toString()]));
    const first: Json = secret?.build();
    const [a, b] = [decoded(first), decoded(secret?.build())];
    expect(a.password).toMatch(/^[0-9a-f]{64}$/);
    expect(b.password).not.toBe(a.password);
    expect(a["redis.conf"]).toBe(`requirepass ${a.password}\n`);
    expect(first.metadata.ownerReferences[0].uid).toBe("uid-agd");
    expect(() => new Secret(first).validate()).not.toThrow();
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

describe("managed Redis password", () => {
  const sts: Json = buildRedisStatefulSet(agentDeployment(), settings);
  const container = sts.spec.template.spec.containers[0];

  it("reads the password from a config file in its Secret, never from the command line", () => {
    expect(container.args).toEqual(["redis-server", "/etc/redis/redis.conf", "--appendonly", "yes", "--dir", "/data"]);
    expect(container.args.join(" ")).not.toMatch(/requirepass|protected-mode/);
    const mount = container.volumeMounts.find((m: Json) => m.mountPath === "/etc/redis");
    const volume = sts.spec.template.spec.volumes.find((v: Json) => v.name === mount.name);
    expect(volume.secret).toMatchObject({
      secretName: `agent-${DEPLOYMENT_ID}-redis`,
      items: [{ key: "redis.conf", path: "redis.conf" }],
    });
    expect(mount.readOnly).toBe(true);
  });

  it("lets the readiness probe authenticate through REDISCLI_AUTH from the Secret", () => {
    expect(container.readinessProbe.exec.command).toEqual(["redis-cli", "ping"]);
    expect(container.env).toEqual([
      { name: "REDISCLI_AUTH", valueFrom: { secretKeyRef: { name: `agent-${DEPLOYMENT_ID}-redis`, key: "password" } } },
    ]);
  });

  it("requests CPU and memory, limits memory only, and holds liveness back with a startup probe", () => {
    expect(container.resources).toEqual({ requests: { cpu: "100m", memory: "256Mi" }, limits: { memory: "1Gi" } });
    expect(container.startupProbe).toEqual({ tcpSocket: { port: "redis" }, periodSeconds: 2, failureThreshold: 30 });
    expect(container.livenessProbe.initialDelaySeconds).toBeUndefined();
  });
});

describe("NetworkPolicies", () => {
  const agd = agentDeployment();
  const instance = { "app.kubernetes.io/instance": DEPLOYMENT_ID };

  it("admit only this deployment's agent-server pods to its Redis, on 6379", () => {
    const policy: Json = buildRedisNetworkPolicy(agd);
    expect(() => new NetworkPolicy(policy).validate()).not.toThrow();
    expect(policy.spec.podSelector.matchLabels).toEqual({ ...instance, "app.kubernetes.io/component": "redis" });
    expect(policy.spec.policyTypes).toEqual(["Ingress"]);
    expect(policy.spec.ingress).toEqual([
      {
        from: [{ podSelector: { matchLabels: { ...instance, "app.kubernetes.io/component": "agent-server" } } }],
        ports: [{ protocol: "TCP", port: 6379 }],
      },
    ]);
    // The selector matches the pods the builders label, and no pod of another deployment.
    const redisPod = buildRedisStatefulSet(agd, settings).spec.template.metadata.labels;
    const agentPod: Json = buildAgentDeployment(agd, agentRevision(), settings).spec.template.metadata.labels;
    const otherPod: Json = buildAgentDeployment(agentDeployment({}, { name: "other" }), agentRevision(), settings).spec
      .template.metadata.labels;
    const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
      Object.entries(selector).every(([k, v]) => labels[k] === v);
    expect(selects(policy.spec.podSelector.matchLabels, redisPod)).toBe(true);
    expect(selects(policy.spec.ingress[0].from[0].podSelector.matchLabels, agentPod)).toBe(true);
    expect(selects(policy.spec.ingress[0].from[0].podSelector.matchLabels, otherPod)).toBe(false);
  });

  it("admit to the agent servers only the configured ingress path, on the agent port", () => {
    const policy: Json = buildAgentNetworkPolicy(agd, settings);
    expect(() => new NetworkPolicy(policy).validate()).not.toThrow();
    expect(policy.spec.podSelector.matchLabels).toEqual({ ...instance, "app.kubernetes.io/component": "agent-server" });
    expect(policy.spec.ingress).toEqual([
      {
        from: [{ namespaceSelector: { matchLabels: { "agentplane.dev/ingress": "true" } } }],
        ports: [{ protocol: "TCP", port: 8000 }],
      },
    ]);
  });

  it("admit nothing when no ingress peer is configured (an empty `from` would admit everything)", () => {
    const policy: Json = buildAgentNetworkPolicy(agd, { ...settings, agentIngressFrom: [] });
    expect(policy.spec.ingress).toEqual([]);
    expect(policy.spec.policyTypes).toEqual(["Ingress"]);
  });
});
