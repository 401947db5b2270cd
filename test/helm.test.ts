import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { BASE_VALUES, CHART, helm, type KubeManifest, REPO, renderChart, withValues } from "../testing/helm.ts";

/** `new Kind(manifest).validate()` from kubernetes-models: the Kubernetes OpenAPI schema of that kind. */
async function validateManifest(manifest: KubeManifest): Promise<void> {
  const models = (await import(`kubernetes-models/${manifest.apiVersion}`)) as Record<
    string,
    new (
      data: unknown,
    ) => { validate(): void }
  >;
  const Model = models[manifest.kind];
  if (!Model) throw new Error(`kubernetes-models has no ${manifest.apiVersion} ${manifest.kind}`);
  new Model(manifest).validate();
}

type Attribute = { baseName: string; type: string };
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Fields the Kubernetes API does not know (what `kubectl apply --validate=strict` rejects), found with
 * the field tables of @kubernetes/client-node's generated models; kubernetes-models ignores them.
 */
function unknownFields(value: unknown, type: string, path = ""): string[] {
  const array = /^Array<(.+)>$/.exec(type);
  if (array)
    return Array.isArray(value) ? value.flatMap((item, i) => unknownFields(item, array[1]!, `${path}[${i}]`)) : [];
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map)
    return isObject(value) ? Object.entries(value).flatMap(([k, v]) => unknownFields(v, map[1]!, `${path}.${k}`)) : [];
  const model = (k8s as unknown as Record<string, { getAttributeTypeMap?: () => Attribute[] }>)[type];
  const attributes = model?.getAttributeTypeMap?.();
  if (!attributes || !isObject(value)) return [];
  const known = new Map(attributes.map((a) => [a.baseName, a.type]));
  return Object.entries(value).flatMap(([key, child]) => {
    const childType = known.get(key);
    return childType === undefined ? [`${path}.${key}`] : unknownFields(child, childType, `${path}.${key}`);
  });
}

const modelName = (manifest: KubeManifest) => `V${manifest.apiVersion.split("/").at(-1)?.slice(1)}${manifest.kind}`;

const VALUE_SETS: Record<string, object> = {
  defaults: BASE_VALUES,
  "high availability": withValues(BASE_VALUES, {
    operator: { replicas: 3 },
    controlPlane: { replicas: 2 },
  }),
  "one watched namespace, ingress with TLS, registry images": withValues(BASE_VALUES, {
    image: { registry: "ghcr.io/acme/", tag: "1.2.3", pullSecrets: [{ name: "regcred" }] },
    operator: { watchNamespace: "agents", redisStorageClass: "fast", agentServiceType: "LoadBalancer" },
    controlPlane: {
      namespaceLayout: "shared",
      namespaces: ["agents"],
      ingress: { enabled: true, className: "nginx", host: "agents.example.com", tlsSecretName: "agents-tls" },
    },
  }),
  "existing Secret and JWT, several namespaces": {
    controlPlane: {
      apiKeys: { existingSecret: "my-keys", key: "grants.jsonl" },
      jwt: { existingSecret: "jwt", jwksUrl: "https://issuer.example/.well-known/jwks.json", audience: "agentplane" },
      namespaceLayout: "shared",
      namespaces: ["team-a", "team-b"],
      providersNamespace: "auth",
    },
  },
};

const byKind = (manifests: KubeManifest[], kind: string) => manifests.filter((m) => m.kind === kind);
const named = (manifests: KubeManifest[], kind: string, suffix: string) =>
  manifests.find((m) => m.kind === kind && m.metadata.name.endsWith(suffix));
const envOf = (deployment: KubeManifest | undefined) =>
  Object.fromEntries(
    (deployment?.spec.template.spec.containers[0].env as { name: string; value?: string }[]).map((e) => [
      e.name,
      e.value,
    ]),
  );

describe.each(Object.entries(VALUE_SETS))("chart with %s", (_name, values) => {
  const manifests = renderChart(values);

  it("passes helm lint --strict", () => {
    const lint = helm(["lint", "--strict", CHART], values);
    expect(lint.stderr + lint.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    expect(lint.status).toBe(0);
  });

  it("renders only objects that validate against the Kubernetes schemas", async () => {
    expect(manifests.length).toBeGreaterThan(10);
    for (const manifest of manifests) {
      await expect(validateManifest(manifest), `${manifest.kind} ${manifest.metadata.name}`).resolves.toBeUndefined();
    }
    for (const manifest of manifests) {
      expect(unknownFields(manifest, modelName(manifest)), `${manifest.kind} ${manifest.metadata.name}`).toEqual([]);
    }
  });

  it("labels every object the standard way", () => {
    for (const manifest of manifests) {
      expect(manifest.metadata.labels, `${manifest.kind} ${manifest.metadata.name}`).toMatchObject({
        "app.kubernetes.io/name": "agentplane",
        "app.kubernetes.io/instance": "ap",
        "app.kubernetes.io/managed-by": "Helm",
        "app.kubernetes.io/part-of": "agentplane",
        "helm.sh/chart": "agentplane-0.1.0",
      });
    }
  });

  it("runs both pods locked down: non-root, read-only root, no escalation, no capabilities, seccomp, requests", () => {
    const deployments = byKind(manifests, "Deployment");
    expect(deployments.map((d) => d.metadata.labels?.["app.kubernetes.io/component"]).sort()).toEqual([
      "control-plane",
      "operator",
    ]);
    for (const deployment of deployments) {
      const pod = deployment.spec.template.spec;
      expect(pod.securityContext).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 1000,
        seccompProfile: { type: "RuntimeDefault" },
      });
      expect(pod.serviceAccountName).toBe(deployment.metadata.name);
      expect(pod.volumes).toContainEqual({ name: "tmp", emptyDir: { sizeLimit: "64Mi" } });
      for (const container of pod.containers) {
        expect(container.securityContext).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ["ALL"] },
        });
        expect(container.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
        expect(container.volumeMounts).toContainEqual({ name: "tmp", mountPath: "/tmp" });
        expect(container.livenessProbe.httpGet.path).toMatch(/^\/(ok|healthz)$/);
        expect(container.readinessProbe.httpGet.path).toMatch(/^\/(ok|readyz)$/);
      }
    }
  });

  it("gives the operator leader election, and a PodDisruptionBudget exactly when it has spare replicas", () => {
    const operator = named(manifests, "Deployment", "-operator");
    expect(envOf(operator)).toMatchObject({ LEADER_ELECTION: "true", LEASE_NAME: operator?.metadata.name });
    const lease = manifests.find((m) => m.kind === "Role" && m.metadata.name.endsWith("-leader-election"));
    expect(lease?.metadata.namespace).toBe("agentplane");
    expect(lease?.rules).toEqual([
      { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
      {
        apiGroups: ["coordination.k8s.io"],
        resources: ["leases"],
        resourceNames: [operator?.metadata.name],
        verbs: ["get", "update"],
      },
    ]);
    for (const deployment of byKind(manifests, "Deployment")) {
      const pdb = manifests.find(
        (m) => m.kind === "PodDisruptionBudget" && m.metadata.name === deployment.metadata.name,
      );
      if (deployment.spec.replicas > 1) {
        expect(pdb?.spec).toEqual({ minAvailable: 1, selector: deployment.spec.selector });
      } else {
        expect(pdb).toBeUndefined();
      }
    }
  });

  it("never puts a plain API key in a manifest, only SHA-256 hashes", () => {
    const secret = named(manifests, "Secret", "-api-keys");
    if (secret) {
      for (const line of secret.stringData["api-keys.jsonl"].trim().split("\n")) {
        expect(JSON.parse(line).hash).toMatch(/^[0-9a-f]{64}$/);
      }
    }
    const controlPlane = named(manifests, "Deployment", "-control-plane");
    const env = controlPlane?.spec.template.spec.containers[0].env as { name: string; value?: string }[];
    expect(env.find((e) => e.name === "CONTROL_PLANE_JWT_SECRET")?.value).toBeUndefined();
  });
});

describe("chart specifics", () => {
  it("binds the operator cluster-wide by default, to one Role when it watches one namespace", () => {
    const all = renderChart(BASE_VALUES);
    expect(byKind(all, "ClusterRole").map((r) => r.metadata.name)).toEqual([
      "ap-agentplane-control-plane",
      "ap-agentplane-operator",
    ]);
    expect(named(all, "ClusterRoleBinding", "-operator")?.subjects).toEqual([
      { kind: "ServiceAccount", name: "ap-agentplane-operator", namespace: "agentplane" },
    ]);
    const one = renderChart(
      withValues(BASE_VALUES, {
        operator: { watchNamespace: "agents" },
        controlPlane: { namespaceLayout: "shared", namespaces: ["agents"] },
      }),
    );
    expect(byKind(one, "ClusterRole")).toEqual([]);
    expect(named(one, "Role", "-operator")?.metadata.namespace).toBe("agents");
    expect(envOf(named(one, "Deployment", "-operator")).WATCH_NAMESPACE).toBe("agents");
  });

  it("gives the control plane a Role in each deployment namespace and one for OAuth providers", () => {
    const manifests = renderChart(VALUE_SETS["existing Secret and JWT, several namespaces"]!);
    const roles = byKind(manifests, "Role").filter((r) => r.metadata.name.startsWith("ap-agentplane-control-plane"));
    expect(roles.map((r) => `${r.metadata.namespace}/${r.metadata.name}`).sort()).toEqual([
      "auth/ap-agentplane-control-plane-providers",
      "team-a/ap-agentplane-control-plane",
      "team-b/ap-agentplane-control-plane",
    ]);
    const env = envOf(named(manifests, "Deployment", "-control-plane"));
    expect(env).toMatchObject({
      CONTROL_PLANE_NAMESPACES: "team-a,team-b",
      CONTROL_PLANE_PROVIDERS_NAMESPACE: "auth",
      CONTROL_PLANE_API_KEYS_FILE: "/etc/agentplane/api-keys/grants.jsonl",
      CONTROL_PLANE_JWKS_URL: "https://issuer.example/.well-known/jwks.json",
    });
    expect(named(manifests, "Secret", "-api-keys")).toBeUndefined();
    const pod = named(manifests, "Deployment", "-control-plane")?.spec.template.spec;
    expect(pod.volumes).toContainEqual({
      name: "api-keys",
      secret: { secretName: "my-keys", items: [{ key: "grants.jsonl", path: "grants.jsonl" }] },
    });
  });

  it("points both entry points of the platform image at the configured registry and tag", () => {
    const manifests = renderChart(VALUE_SETS["one watched namespace, ingress with TLS, registry images"]!);
    for (const deployment of byKind(manifests, "Deployment")) {
      expect(deployment.spec.template.spec.containers[0].image).toBe("ghcr.io/acme/platform:1.2.3");
      expect(deployment.spec.template.spec.imagePullSecrets).toEqual([{ name: "regcred" }]);
    }
    expect(named(manifests, "Deployment", "-operator")?.spec.template.spec.containers[0].args).toEqual(["operator"]);
    const ingress = named(manifests, "Ingress", "-control-plane");
    expect(ingress?.spec.tls).toEqual([{ hosts: ["agents.example.com"], secretName: "agents-tls" }]);
    expect(renderChart(BASE_VALUES).find((m) => m.kind === "Ingress")).toBeUndefined();
    expect(named(renderChart(BASE_VALUES), "Deployment", "-operator")?.spec.template.spec.containers[0].image).toBe(
      "agentplane/platform:0.1.0",
    );
  });

  it("restarts the control plane when its API-key grants change", () => {
    const checksum = (values: object) =>
      named(renderChart(values), "Deployment", "-control-plane")?.spec.template.metadata.annotations[
        "checksum/api-keys"
      ];
    const other = withValues(BASE_VALUES, {
      controlPlane: { apiKeys: { grants: [{ ...BASE_VALUES.controlPlane.apiKeys.grants[0], workspace_ids: [] }] } },
    });
    expect(checksum(BASE_VALUES)).toMatch(/^[0-9a-f]{64}$/);
    expect(checksum(other)).not.toBe(checksum(BASE_VALUES));
  });

  it("installs the CRDs from its crds/ folder, byte-identical to crds/ (sync: make chart-crds)", async () => {
    const source = readdirSync(join(REPO, "crds"))
      .filter((f) => f.endsWith(".yaml"))
      .sort();
    expect(readdirSync(join(CHART, "crds")).sort()).toEqual(source);
    for (const file of source) {
      expect(readFileSync(join(CHART, "crds", file), "utf8"), file).toBe(
        readFileSync(join(REPO, "crds", file), "utf8"),
      );
    }
    const crds = byKind(renderChart(BASE_VALUES, ["--include-crds"]), "CustomResourceDefinition");
    expect(crds.map((crd) => crd.metadata.name).sort()).toEqual([
      "agentdeployments.agentplane.dev",
      "agentrevisions.agentplane.dev",
    ]);
    for (const crd of crds) {
      await validateManifest(crd);
      expect(unknownFields(crd, modelName(crd)), crd.metadata.name).toEqual([]);
    }
  });

  it("prints the first commands to run after install", () => {
    const install = helm(["install", "ap", CHART, "--namespace", "agentplane", "--dry-run=client"], BASE_VALUES);
    expect(install.stderr).toBe("");
    const notes = install.stdout.slice(install.stdout.indexOf("NOTES:"));
    expect(notes).toContain(
      "kubectl -n agentplane rollout status deploy/ap-agentplane-control-plane deploy/ap-agentplane-operator",
    );
    expect(notes).toContain("port-forward svc/ap-agentplane-control-plane 8080:80");
    expect(notes).toContain("kubectl get agentdeployments,agentrevisions -A");
  });

  it("the unknown-field check is live: a misspelt field is caught", () => {
    const [deployment] = byKind(renderChart(BASE_VALUES), "Deployment");
    const pod = deployment!.spec.template.spec;
    const typo = {
      ...deployment!,
      spec: { ...deployment!.spec, template: { ...deployment!.spec.template, spec: { ...pod, securityContex: {} } } },
    };
    expect(unknownFields(typo, modelName(typo))).toEqual([".spec.template.spec.securityContex"]);
    expect(modelName({ apiVersion: "autoscaling/v2", kind: "HorizontalPodAutoscaler" } as KubeManifest)).toBe(
      "V2HorizontalPodAutoscaler",
    );
  });

  it("the schema validator is live: a wrong type is caught by kubernetes-models", async () => {
    const [deployment] = byKind(renderChart(BASE_VALUES), "Deployment");
    await expect(validateManifest({ ...deployment!, spec: { ...deployment!.spec, replicas: "2" } })).rejects.toThrow(
      /replicas must be integer/,
    );
  });
});

describe("values the chart refuses", () => {
  it.each([
    ["no credentials at all", {}, /control plane needs credentials/],
    [
      "an unknown key",
      withValues(BASE_VALUES, { operator: { replica: 2 } }),
      /additional properties 'replica' not allowed/,
    ],
    [
      "a plain key instead of a hash",
      withValues(BASE_VALUES, {
        controlPlane: {
          apiKeys: {
            grants: [
              { hash: "my-secret-key", organization_id: "00000000-0000-4000-8000-000000000001", workspace_ids: [] },
            ],
          },
        },
      }),
      /hash/,
    ],
    ["replicas 0", withValues(BASE_VALUES, { operator: { replicas: 0 } }), /replicas/],
    [
      "HA without leader election",
      withValues(BASE_VALUES, { operator: { replicas: 2, leaderElection: false } }),
      /needs operator\.leaderElection=true/,
    ],
    ["an unknown log level", withValues(BASE_VALUES, { controlPlane: { logLevel: "verbose" } }), /logLevel/],
    [
      "a bad namespace name",
      withValues(BASE_VALUES, { controlPlane: { namespaceLayout: "shared", namespaces: ["Team_A"] } }),
      /namespaces/,
    ],
    [
      "shared namespaces without the shared layout",
      withValues(BASE_VALUES, { controlPlane: { namespaces: ["agents"] } }),
      /namespaceLayout=shared only/,
    ],
    [
      "tenant namespaces with an operator watching one namespace",
      withValues(BASE_VALUES, { operator: { watchNamespace: "agents" } }),
      /must watch all namespaces/,
    ],
    [
      "a tenant namespace prefix that is no DNS label",
      withValues(BASE_VALUES, { controlPlane: { tenantNamespacePrefix: "Tenants_" } }),
      /tenantNamespacePrefix/,
    ],
    [
      "ingress without host",
      withValues(BASE_VALUES, { controlPlane: { ingress: { enabled: true } } }),
      /needs controlPlane\.ingress\.host/,
    ],
    [
      "an unwatched deployment namespace",
      withValues(BASE_VALUES, {
        operator: { watchNamespace: "a" },
        controlPlane: { namespaceLayout: "shared", namespaces: ["a", "b"] },
      }),
      /includes b, which the operator does not watch/,
    ],
    [
      "privilege escalation",
      withValues(BASE_VALUES, { containerSecurityContext: { allowPrivilegeEscalation: true } }),
      /allowPrivilegeEscalation/,
    ],
    ["running as root", withValues(BASE_VALUES, { podSecurityContext: { runAsNonRoot: false } }), /runAsNonRoot/],
  ])("%s", (_name, values, message) => {
    const result = helm(["template", "ap", CHART], values);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(message);
  });
});
