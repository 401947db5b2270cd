import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { toValidationIssues } from "@agentplane/common";
import { isReservedEnvName, SHARED_WITH_ANNOTATION, sharedWithWorkspace } from "@agentplane/crds";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { PolicyInitContainer, PolicySidecar, PolicyVolume, withRestrictedSecurityContext } from "./pod-policy.ts";
import { referencedObjects } from "./pod-references.ts";
import { podFieldIssues } from "./pod-rules.ts";

const AGENT_SERVER_SRC = fileURLToPath(new URL("../../../agent-server/src", import.meta.url));

/** Every `env.NAME` the agent server's sources (not its tests) read. */
function agentServerEnvNames(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      // testing/ holds test harnesses, not the server
      if (entry.isDirectory()) {
        if (entry.name !== "testing") walk(path);
      } else if (entry.name.endsWith(".ts") && !entry.name.includes(".test.")) {
        for (const match of readFileSync(path, "utf8").matchAll(/\benv\.([A-Z][A-Z0-9_]*)/g)) names.add(match[1]!);
      }
    }
  };
  walk(AGENT_SERVER_SRC);
  return names;
}

/**
 * What the agent server reads that a tenant may set for its own deployment: documented tuning
 * (logging, CORS, tracing, run/cron/store limits). Anything else it reads must be reserved.
 */
const TENANT_SETTINGS = new Set([
  "LOG_LEVEL",
  "CORS_ALLOW_ORIGINS",
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "OTEL_SDK_DISABLED",
  "RUN_LEASE_MS",
  "RUN_MAX_ATTEMPTS",
  "RUN_POLL_MS",
  "RUN_EVENT_LOG_MAX_EVENTS",
  "CRON_TICK_MS",
  "CRON_MISFIRE_GRACE_MS",
  "CRON_CLAIM_LEASE_MS",
  "STORE_MAX_VALUE_BYTES",
  "STREAM_HEARTBEAT_MS",
  "STREAM_STALL_TIMEOUT_MS",
  "POOLED_RANDOM_VALUES",
  "LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS",
  // internal webhook receivers: the deployment's own graph code can reach the same network anyway;
  // egress is the administrator's to restrict (docs/security.md)
  "WEBHOOK_ALLOWED_HOSTS",
  // the project's own LangGraph configuration
  "LANGGRAPH_CONFIG",
  // the process environment in general, not settings of the agent server
  "PATH",
  "HOME",
]);

describe("reserved environment names", () => {
  it("cover every variable the agent server reads except the documented per-deployment tuning", () => {
    const names = agentServerEnvNames();
    expect(names.size).toBeGreaterThan(10);
    const unclassified = [...names].filter((name) => !isReservedEnvName(name) && !TENANT_SETTINGS.has(name));
    expect(unclassified).toEqual([]);
  });

  it.each([
    "AGENTPLANE_API_KEYS",
    "AGENTPLANE_API_KEYS_FILE",
    "AGENTPLANE_ANYTHING",
    "REDIS_URI",
    "NODE_OPTIONS",
    "port",
  ])("%s is reserved", (name) => expect(isReservedEnvName(name)).toBe(true));

  it.each(["OPENAI_API_KEY", "LANGSMITH_API_KEY", "LOG_LEVEL", "MY_REDIS_URI"])("%s is the tenant's", (name) =>
    expect(isReservedEnvName(name)).toBe(false),
  );
});

/** The issues as the API reports them (an extra key is located at the key), without the "body" prefix. */
function issuesOf(result: { success: boolean; error?: z.ZodError }, input: unknown) {
  if (!result.error) return [];
  return toValidationIssues(result.error, "body", input).map((issue) => ({
    path: issue.loc.slice(1),
    message: issue.msg,
  }));
}

describe("volumes", () => {
  it.each([
    ["configMap", { name: "v", configMap: { name: "cfg", items: [{ key: "a", path: "a.txt" }] } }],
    ["secret", { name: "v", secret: { secretName: "s", defaultMode: 0o400 } }],
    ["emptyDir", { name: "v", emptyDir: { medium: "Memory", sizeLimit: "64Mi" } }],
    [
      "projected configMap / secret / downwardAPI",
      {
        name: "v",
        projected: {
          sources: [
            { configMap: { name: "cfg" } },
            { secret: { name: "s" } },
            { downwardAPI: { items: [{ path: "labels", fieldRef: { fieldPath: "metadata.labels" } }] } },
          ],
        },
      },
    ],
  ])("allows %s", (_name, volume) => {
    expect(issuesOf(PolicyVolume.safeParse(volume), volume)).toEqual([]);
  });

  it.each([
    ["hostPath", { name: "v", hostPath: { path: "/" } }, ["hostPath"]],
    ["persistentVolumeClaim", { name: "v", persistentVolumeClaim: { claimName: "c" } }, ["persistentVolumeClaim"]],
    [
      "projected serviceAccountToken",
      { name: "v", projected: { sources: [{ serviceAccountToken: { path: "t" } }] } },
      ["projected", "sources", 0, "serviceAccountToken"],
    ],
    [
      "a path escaping the volume",
      { name: "v", secret: { secretName: "s", items: [{ key: "k", path: "../x" }] } },
      ["secret", "items", 0, "path"],
    ],
    ["two sources", { name: "v", emptyDir: {}, secret: { secretName: "s" } }, []],
    ["no source", { name: "v" }, []],
  ])("refuses %s", (_name, volume, path) => {
    const issues = issuesOf(PolicyVolume.safeParse(volume), volume);
    expect(issues.length).toBeGreaterThan(0);
    expect(issues[0]?.path).toEqual(path);
  });
});

describe("containers", () => {
  const base = { name: "helper", image: "busybox" };

  it.each([
    ["privileged", { securityContext: { privileged: true } }, ["securityContext", "privileged"]],
    [
      "escalation",
      { securityContext: { allowPrivilegeEscalation: true } },
      ["securityContext", "allowPrivilegeEscalation"],
    ],
    [
      "added capabilities",
      { securityContext: { capabilities: { add: ["NET_ADMIN"] } } },
      ["securityContext", "capabilities", "add"],
    ],
    ["root", { securityContext: { runAsUser: 0 } }, ["securityContext", "runAsUser"]],
    ["runAsNonRoot false", { securityContext: { runAsNonRoot: false } }, ["securityContext", "runAsNonRoot"]],
    [
      "Localhost seccomp",
      { securityContext: { seccompProfile: { type: "Localhost" } } },
      ["securityContext", "seccompProfile", "type"],
    ],
    [
      "SELinux options",
      { securityContext: { seLinuxOptions: { level: "s0" } } },
      ["securityContext", "seLinuxOptions"],
    ],
    ["host ports", { ports: [{ containerPort: 80, hostPort: 80 }] }, ["ports", 0, "hostPort"]],
    ["lifecycle hooks", { lifecycle: { postStart: { exec: { command: ["sh"] } } } }, ["lifecycle"]],
    [
      "probes of other hosts",
      { readinessProbe: { tcpSocket: { port: 22, host: "node" } } },
      ["readinessProbe", "tcpSocket", "host"],
    ],
    ["restartPolicy on a sidecar", { restartPolicy: "Always" }, ["restartPolicy"]],
  ])("refuses %s", (_name, extra, path) => {
    const container = { ...base, ...extra };
    const issues = issuesOf(PolicySidecar.safeParse(container), container);
    expect(issues[0]?.path).toEqual(path);
  });

  it("allows what the restricted profile allows, and native sidecars among init containers", () => {
    const container = {
      ...base,
      command: ["sh", "-c", "sleep 1"],
      env: [{ name: "A", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }],
      ports: [{ containerPort: 9090, name: "metrics" }],
      resources: { requests: { cpu: "100m", memory: "64Mi" }, limits: { memory: "128Mi" } },
      readinessProbe: { httpGet: { path: "/ok", port: 9090 }, periodSeconds: 5 },
      securityContext: { readOnlyRootFilesystem: true, runAsUser: 1000, capabilities: { drop: ["ALL"] } },
    };
    expect(issuesOf(PolicySidecar.safeParse(container), container)).toEqual([]);
    const nativeSidecar = { ...container, restartPolicy: "Always" };
    expect(issuesOf(PolicyInitContainer.safeParse(nativeSidecar), nativeSidecar)).toEqual([]);
  });

  it("fills in the restricted security context, keeping what is stricter", () => {
    expect(withRestrictedSecurityContext<{ name: string; securityContext?: object }>({ ...base })).toEqual({
      ...base,
      securityContext: {
        privileged: false,
        allowPrivilegeEscalation: false,
        runAsNonRoot: true,
        capabilities: { drop: ["ALL"] },
        seccompProfile: { type: "RuntimeDefault" },
      },
    });
    const kept = withRestrictedSecurityContext({
      ...base,
      securityContext: { readOnlyRootFilesystem: true, runAsUser: 2000, capabilities: { drop: ["NET_RAW", "ALL"] } },
    });
    expect(kept.securityContext).toMatchObject({ readOnlyRootFilesystem: true, runAsUser: 2000 });
    expect(kept.securityContext?.capabilities).toEqual({ drop: ["ALL", "NET_RAW"] });
  });
});

describe("rules across fields", () => {
  it("refuses platform label and annotation keys, reserved or duplicate names, and mounts of undeclared volumes", () => {
    const issues = podFieldIssues(
      {
        labels: { team: "a", "app.kubernetes.io/instance": "x", "agentplane.dev/deployment-id": "y" },
        annotations: { note: "n", "seccomp.security.alpha.kubernetes.io/pod": "unconfined" },
        volumes: [{ name: "data" }, { name: "data" }, { name: "agentplane-api-keys" }],
        volume_mounts: [{ name: "data" }, { name: "missing" }],
        init_containers: [{ name: "agent-server" }],
        sidecars: [{ name: "proxy", volumeMounts: [{ name: "nope" }] }, { name: "proxy" }],
      },
      ["spec"],
    );
    expect(issues.map((issue) => issue.loc)).toEqual([
      ["spec", "labels", "app.kubernetes.io/instance"],
      ["spec", "labels", "agentplane.dev/deployment-id"],
      ["spec", "annotations", "seccomp.security.alpha.kubernetes.io/pod"],
      ["spec", "volumes", 1, "name"],
      ["spec", "volumes", 2, "name"],
      ["spec", "volume_mounts", 1, "name"],
      ["spec", "init_containers", 0, "name"],
      ["spec", "sidecars", 0, "volumeMounts", 0, "name"],
      ["spec", "sidecars", 1, "name"],
    ]);
  });
});

describe("referenced objects", () => {
  it("lists every Secret, ConfigMap and ServiceAccount a template names, located in the API request", () => {
    const refs = referencedObjects(
      {
        serviceAccountName: "runner",
        imagePullSecrets: [{ name: "pull" }],
        volumes: [
          { name: "a", secret: { secretName: "s1" } },
          { name: "b", configMap: { name: "c1" } },
          { name: "c", projected: { sources: [{ secret: { name: "s2" } }, { configMap: { name: "c2" } }] } },
        ],
        sidecars: [
          {
            name: "x",
            image: "i",
            env: [{ name: "E", valueFrom: { secretKeyRef: { name: "s3", key: "k" } } }],
            envFrom: [{ configMapRef: { name: "c3" } }],
          },
        ],
        initContainers: [{ name: "y", image: "i", envFrom: [{ secretRef: { name: "s4" } }] }],
      },
      [{ name: "DB", secretName: "s0", secretKey: "pw" }],
    );
    expect(refs.map((ref) => `${ref.kind} ${ref.name} ${ref.loc.join(".")}`)).toEqual([
      "Secret s0 body.secret_references.0.secret_name",
      "ServiceAccount runner body.source_config.resource_spec.service_account_name",
      "Secret pull body.source_config.resource_spec.image_pull_secrets.0.name",
      "Secret s1 body.source_config.resource_spec.volumes.0.secret.secretName",
      "ConfigMap c1 body.source_config.resource_spec.volumes.1.configMap.name",
      "Secret s2 body.source_config.resource_spec.volumes.2.projected.sources.0.secret.name",
      "ConfigMap c2 body.source_config.resource_spec.volumes.2.projected.sources.1.configMap.name",
      "Secret s4 body.source_config.resource_spec.init_containers.0.envFrom.0.secretRef.name",
      "Secret s3 body.source_config.resource_spec.sidecars.0.env.0.valueFrom.secretKeyRef.name",
      "ConfigMap c3 body.source_config.resource_spec.sidecars.0.envFrom.0.configMapRef.name",
    ]);
  });

  it("are usable only when an administrator's annotation names the workspace (or '*')", () => {
    const ws = "11111111-1111-4111-8111-111111111111";
    expect(sharedWithWorkspace(undefined, ws)).toBe(false);
    expect(sharedWithWorkspace({}, ws)).toBe(false);
    expect(sharedWithWorkspace({ [SHARED_WITH_ANNOTATION]: `other, ${ws.toUpperCase()}` }, ws)).toBe(true);
    expect(sharedWithWorkspace({ [SHARED_WITH_ANNOTATION]: "*" }, ws)).toBe(true);
    expect(sharedWithWorkspace({ [SHARED_WITH_ANNOTATION]: `${ws}x` }, ws)).toBe(false);
  });
});
