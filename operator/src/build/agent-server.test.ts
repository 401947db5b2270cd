import type { Resources } from "@agentplane/crds";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { Service } from "kubernetes-models/v1/Service";
import { describe, expect, it } from "vitest";
import { agentDeployment, agentRevision, DEPLOYMENT_ID, REVISION_ID } from "../testing/fixtures.ts";
import { buildAgentDeployment, buildAgentService, buildAutoscaler } from "./agent-server.ts";
import { defaultBuildSettings as settings } from "./settings.ts";

type Json = any;

describe("buildAgentDeployment", () => {
  const agd = agentDeployment({ apiKeysSecretName: "keys", template: { image: "example/agent:1", secretName: "s" } });
  const revision = agentRevision({
    image: "example/agent:2",
    secretName: `${DEPLOYMENT_ID}-secrets`,
    secretReferences: [{ name: "OPENAI_API_KEY", secretName: "llm", secretKey: "openai" }],
    resources: {
      minScale: 2,
      cpu: 0.5,
      cpuLimit: 1,
      memoryMb: 512,
      memoryLimitMb: 1024,
      labels: { team: "a" },
      annotations: { note: "x" },
      imagePullSecrets: [{ name: "regcred" }],
      volumes: [{ name: "cache", emptyDir: {} }],
      volumeMounts: [{ name: "cache", mountPath: "/cache" }],
      initContainers: [{ name: "init", image: "busybox" }],
      sidecars: [{ name: "proxy", image: "envoy" }],
    },
  });
  const deployment: Json = buildAgentDeployment(agd, revision, settings);
  const pod = deployment.spec.template;
  const hardened = {
    privileged: false,
    runAsNonRoot: true,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ["ALL"] },
    seccompProfile: { type: "RuntimeDefault" },
  };
  const container = pod.spec.containers[0];

  it("is a valid apps/v1 Deployment", () => {
    expect(() => new Deployment(deployment).validate()).not.toThrow();
  });

  it.each([
    ["image from the revision, not the deployment template", container.image, "example/agent:2"],
    ["replicas from minScale", deployment.spec.replicas, 2],
    ["revision label on the pod template", pod.metadata.labels["agentplane.dev/revision-id"], REVISION_ID],
    ["revision annotation on the pod template", pod.metadata.annotations["agentplane.dev/revision-id"], REVISION_ID],
    ["user labels on the pod", pod.metadata.labels.team, "a"],
    ["user annotations on the pod", pod.metadata.annotations.note, "x"],
    ["no service account unless the revision names a shared one", pod.spec.serviceAccountName, undefined],
    ["no service account token", pod.spec.automountServiceAccountToken, false],
    ["image pull secrets", pod.spec.imagePullSecrets, [{ name: "regcred" }]],
    [
      "init containers, hardened",
      pod.spec.initContainers,
      [{ name: "init", image: "busybox", securityContext: hardened }],
    ],
    [
      "sidecars after the agent server, hardened",
      pod.spec.containers[1],
      { name: "proxy", image: "envoy", securityContext: hardened },
    ],
    ["readiness probe pings storage", container.readinessProbe.httpGet, { path: "/ok?check_db=1", port: 8000 }],
    ["liveness probe on /ok:8000", container.livenessProbe.httpGet, { path: "/ok", port: 8000 }],
    ["requests", container.resources.requests, { cpu: "500m", memory: "512Mi" }],
    ["limits", container.resources.limits, { cpu: "1000m", memory: "1024Mi" }],
    ["env from the deployment's Secret", container.envFrom, [{ secretRef: { name: `${DEPLOYMENT_ID}-secrets` } }]],
    ["pod runs as non-root", pod.spec.securityContext.runAsNonRoot, true],
    ["container cannot escalate", container.securityContext.allowPrivilegeEscalation, false],
    ["agent container hardened", container.securityContext, hardened],
    ["selector excludes the revision", deployment.spec.selector.matchLabels["agentplane.dev/revision-id"], undefined],
    ["controller owner reference", deployment.metadata.ownerReferences[0].controller, true],
    ["owner is the AgentDeployment", deployment.metadata.ownerReferences[0].kind, "AgentDeployment"],
    ["tenant label", deployment.metadata.labels["agentplane.dev/tenant-id"], "tenant-1"],
    ["managed-by label", deployment.metadata.labels["app.kubernetes.io/managed-by"], "agentplane-operator"],
  ])("%s", (_what, actual, expected) => {
    expect(actual).toEqual(expected);
  });

  it("maps secret references to secretKeyRef env vars", () => {
    expect(container.env).toContainEqual({
      name: "OPENAI_API_KEY",
      valueFrom: { secretKeyRef: { name: "llm", key: "openai" } },
    });
  });

  it("mounts the API-key hashes Secret as a file and points the server at it", () => {
    const mount = container.volumeMounts.find((m: Json) => m.name === "agentplane-api-keys");
    const volume = pod.spec.volumes.find((v: Json) => v.name === "agentplane-api-keys");
    expect(volume.secret.secretName).toBe("keys");
    const file = container.env.find((e: Json) => e.name === "AGENTPLANE_API_KEYS_FILE").value;
    expect(file).toBe(`${mount.mountPath}/api-key-hashes`);
    expect(pod.spec.volumes.map((v: Json) => v.name)).toContain("cache");
  });

  it("REDIS_URI of the managed Redis carries its password by reference, not in clear", () => {
    const built: Json = buildAgentDeployment(agentDeployment(), agentRevision(), settings);
    const env = built.spec.template.spec.containers[0].env;
    const password = env.findIndex((e: Json) => e.name === "AGENTPLANE_REDIS_PASSWORD");
    const uri = env.findIndex((e: Json) => e.name === "REDIS_URI");
    expect(env[password].valueFrom).toEqual({
      secretKeyRef: { name: `agent-${DEPLOYMENT_ID}-redis`, key: "password" },
    });
    expect(env[uri].value).toBe(
      `redis://:$(AGENTPLANE_REDIS_PASSWORD)@agent-${DEPLOYMENT_ID}-redis.agents.svc.cluster.local:6379`,
    );
    // The kubelet expands $(VAR) only from variables defined earlier in the list.
    expect(password).toBeLessThan(uri);
  });

  it("REDIS_URI of an external Redis comes from its URL Secret", () => {
    const redis = { externalUrlSecretRef: { name: `${DEPLOYMENT_ID}-redis-url`, key: "url" } };
    const built: Json = buildAgentDeployment(agentDeployment({ redis }), agentRevision(), settings);
    const env = built.spec.template.spec.containers[0].env;
    expect(env).toContainEqual({ name: "REDIS_URI", valueFrom: { secretKeyRef: redis.externalUrlSecretRef } });
    expect(env.map((e: Json) => e.name)).not.toContain("AGENTPLANE_REDIS_PASSWORD");
  });

  it("sets every agent-server setting explicitly, after the tenant's variables, so envFrom cannot override them", () => {
    const names = container.env.map((e: Json) => e.name);
    for (const name of ["PORT", "HOST", "REDIS_URI", "REDIS_PREFIX", "AGENTPLANE_API_KEYS", "NODE_OPTIONS"]) {
      expect(names).toContain(name);
      expect(names.indexOf(name)).toBeGreaterThan(names.indexOf("OPENAI_API_KEY"));
    }
    expect(container.env.find((e: Json) => e.name === "AGENTPLANE_API_KEYS").value).toBe("");
  });

  it("names the ServiceAccount the revision asks for (the pod policy admits only shared ones), still without a token", () => {
    const revision = agentRevision({ resources: { serviceAccountName: "workload-identity" } });
    const spec: Json = buildAgentDeployment(agd, revision, settings).spec.template.spec;
    expect(spec.serviceAccountName).toBe("workload-identity");
    expect(spec.automountServiceAccountToken).toBe(false);
  });

  it("leaves replicas to the autoscaler when there is one", () => {
    const built: Json = buildAgentDeployment(
      agd,
      agentRevision({ resources: { minScale: 1, maxScale: 3, cpu: 0.5 } }),
      settings,
    );
    expect(built.spec.replicas).toBeUndefined();
  });

  it("runs the minimum scale itself when an autoscaler could not scale (no CPU request)", () => {
    const built: Json = buildAgentDeployment(agd, agentRevision({ resources: { minScale: 2, maxScale: 3 } }), settings);
    expect(built.spec.replicas).toBe(2);
  });

  it("mounts no API-key file when no Secret is named", () => {
    const built: Json = buildAgentDeployment(agentDeployment(), agentRevision(), settings);
    expect(built.spec.template.spec.containers[0].env).toContainEqual({ name: "AGENTPLANE_API_KEYS_FILE", value: "" });
    expect(built.spec.template.spec.volumes).toEqual([]);
  });
});

describe("buildAutoscaler", () => {
  it.each([
    [{}, false],
    [{ minScale: 1, maxScale: 1 }, false],
    [{ minScale: 2, maxScale: 2 }, false],
    [{ minScale: 1, maxScale: 4, cpu: 0.5 }, true],
    [{ maxScale: 3, cpuLimit: 1 }, true],
    [{ minScale: 0, maxScale: 1, cpu: 0.5 }, false],
    // No CPU request on the agent server, or on a sidecar: the HPA would never scale.
    [{ minScale: 1, maxScale: 4 }, false],
    [{ minScale: 1, maxScale: 4, cpu: 0.5, sidecars: [{ name: "proxy", image: "envoy" }] }, false],
    [
      {
        minScale: 1,
        maxScale: 4,
        cpu: 0.5,
        sidecars: [{ name: "proxy", image: "envoy", resources: { requests: { cpu: "100m" } } }],
      },
      true,
    ],
  ] as [Resources, boolean][])("resources %j -> HPA %s", (resources, expected) => {
    const hpa = buildAutoscaler(agentDeployment(), agentRevision({ resources }), settings);
    expect(hpa !== undefined).toBe(expected);
    if (hpa) {
      expect(() => new HorizontalPodAutoscaler(hpa as Json).validate()).not.toThrow();
      expect(hpa.spec.maxReplicas).toBe(resources.maxScale);
    }
  });
});

describe("buildAgentService", () => {
  it("exposes the agent port and selects only agent-server pods", () => {
    const service: Json = buildAgentService(agentDeployment(), settings);
    expect(() => new Service(service).validate()).not.toThrow();
    expect(service.spec.ports[0].port).toBe(8000);
    expect(service.spec.selector["app.kubernetes.io/component"]).toBe("agent-server");
    expect(service.metadata.name).toMatch(/^[a-z]([-a-z0-9]*[a-z0-9])?$/);
  });
});
