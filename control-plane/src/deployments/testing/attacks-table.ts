import { revisionSecretName } from "@agentplane/crds";
import { providerObjectName } from "../../providers/store.ts";
import { type Harness, PROVIDERS_NAMESPACE, TENANT_PREFIX } from "../../testing/harness.ts";

/**
 * The table of ../attacks.integration.test.ts (issue #15): requests an attacker holding an ordinary
 * API key of workspace A1 sends against organization B and the platform, each with the status it
 * must get.
 */

export const nsOf = (workspace: string) => `${TENANT_PREFIX}${workspace}`;

export const body = (overrides: Record<string, unknown> = {}) => ({
  name: `attack-${Math.random().toString(36).slice(2, 8)}`,
  source: "external_docker",
  source_config: { resource_spec: { min_scale: 1 } },
  source_revision_config: { image_uri: "registry.example/agent:1" },
  secrets: [{ name: "OPENAI_API_KEY", value: "sk-test" }],
  ...overrides,
});
const withSpec = (resourceSpec: Record<string, unknown>) =>
  body({ source_config: { resource_spec: { min_scale: 1, ...resourceSpec } } });
export const sidecar = (extra: Record<string, unknown>) => ({ name: "helper", image: "busybox", ...extra });
/**
 * A request body whose `marker` string is replaced by JSON nested `depth` levels deep, as raw text
 * (JSON.stringify itself overflows the stack on it, which is how such bodies used to give 500s).
 */
const MARKER = "__nested__";
const deep = (document: unknown, depth = 20_000) =>
  JSON.stringify(document).replace(`"${MARKER}"`, `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`);

export type Created = { id: string; latest_revision_id: string };

/** What the test's `beforeAll` sets up and the rows read when they run. */
export interface World {
  h: Harness;
  victim: Created;
}

export interface Attack {
  name: string;
  method?: string;
  /** Defaults to create; `mine` / `victim` are replaced by those deployments' paths. */
  path?: string;
  body?: () => unknown;
  /** Sent verbatim instead of `body`. */
  raw?: () => string;
  headers?: () => Record<string, string>;
  status: number;
  /** For 422s: where the first issue must point. */
  loc?: (string | number)[];
}

export const victimSecret = (world: World) => revisionSecretName(world.victim.id, world.victim.latest_revision_id);

export function attackTable(world: World): Attack[] {
  const RS = ["body", "source_config", "resource_spec"];
  return [
    // Another tenant's Secrets, however they are named
    {
      name: "secret_references to another deployment's Secret",
      body: () =>
        body({ secret_references: [{ name: "STOLEN", secret_name: victimSecret(world), secret_key: "VICTIM_TOKEN" }] }),
      status: 422,
      loc: ["body", "secret_references", 0, "secret_name"],
    },
    {
      name: "secret_references to another organization's OAuth provider Secret",
      body: () =>
        body({
          secret_references: [
            { name: "STOLEN", secret_name: providerObjectName(world.h.ids.orgB, "b-idp"), secret_key: "client_secret" },
          ],
        }),
      status: 422,
      loc: ["body", "secret_references", 0, "secret_name"],
    },
    {
      name: "secret_references to a Secret shared with another workspace only",
      body: () => body({ secret_references: [{ name: "DB", secret_name: "a2-only", secret_key: "pw" }] }),
      status: 422,
      loc: ["body", "secret_references", 0, "secret_name"],
    },
    {
      name: "sidecar env valueFrom.secretKeyRef to another tenant's Secret",
      body: () =>
        withSpec({
          sidecars: [
            sidecar({
              env: [{ name: "X", valueFrom: { secretKeyRef: { name: victimSecret(world), key: "VICTIM_TOKEN" } } }],
            }),
          ],
        }),
      status: 422,
      loc: [...RS, "sidecars", 0, "env", 0, "valueFrom", "secretKeyRef", "name"],
    },
    {
      name: "init container envFrom of another tenant's Secret",
      body: () => withSpec({ init_containers: [sidecar({ envFrom: [{ secretRef: { name: victimSecret(world) } }] })] }),
      status: 422,
      loc: [...RS, "init_containers", 0, "envFrom", 0, "secretRef", "name"],
    },
    {
      name: "sidecar env from a ConfigMap nobody shared",
      body: () =>
        withSpec({
          sidecars: [sidecar({ env: [{ name: "X", valueFrom: { configMapKeyRef: { name: "settings", key: "a" } } }] })],
        }),
      status: 422,
      loc: [...RS, "sidecars", 0, "env", 0, "valueFrom", "configMapKeyRef", "name"],
    },
    {
      name: "secret volume of another tenant's Secret",
      body: () => withSpec({ volumes: [{ name: "loot", secret: { secretName: victimSecret(world) } }] }),
      status: 422,
      loc: [...RS, "volumes", 0, "secret", "secretName"],
    },
    {
      name: "projected secret source of another tenant's Secret",
      body: () =>
        withSpec({ volumes: [{ name: "loot", projected: { sources: [{ secret: { name: victimSecret(world) } }] } }] }),
      status: 422,
      loc: [...RS, "volumes", 0, "projected", "sources", 0, "secret", "name"],
    },
    {
      name: "image_pull_secrets of another tenant",
      body: () => withSpec({ image_pull_secrets: [{ name: victimSecret(world) }] }),
      status: 422,
      loc: [...RS, "image_pull_secrets", 0, "name"],
    },
    // The platform's identity
    {
      name: "service_account_name of the control plane",
      body: () => withSpec({ service_account_name: "ap-agentplane-control-plane" }),
      status: 422,
      loc: [...RS, "service_account_name"],
    },
    {
      name: "service_account_name not allow-listed for the workspace",
      body: () => withSpec({ service_account_name: "privileged-ci" }),
      status: 422,
      loc: [...RS, "service_account_name"],
    },
    {
      name: "projected serviceAccountToken volume",
      body: () =>
        withSpec({
          volumes: [
            { name: "token", projected: { sources: [{ serviceAccountToken: { path: "token", audience: "api" } }] } },
          ],
        }),
      status: 422,
      loc: [...RS, "volumes", 0, "projected", "sources", 0, "serviceAccountToken"],
    },
    // The node
    {
      name: "hostPath / volume",
      body: () => withSpec({ volumes: [{ name: "root", hostPath: { path: "/" } }] }),
      status: 422,
      loc: [...RS, "volumes", 0, "hostPath"],
    },
    {
      name: "privileged sidecar",
      body: () => withSpec({ sidecars: [sidecar({ securityContext: { privileged: true } })] }),
      status: 422,
      loc: [...RS, "sidecars", 0, "securityContext", "privileged"],
    },
    {
      name: "init container allowing privilege escalation",
      body: () => withSpec({ init_containers: [sidecar({ securityContext: { allowPrivilegeEscalation: true } })] }),
      status: 422,
      loc: [...RS, "init_containers", 0, "securityContext", "allowPrivilegeEscalation"],
    },
    {
      name: "sidecar adding SYS_ADMIN",
      body: () => withSpec({ sidecars: [sidecar({ securityContext: { capabilities: { add: ["SYS_ADMIN"] } } })] }),
      status: 422,
      loc: [...RS, "sidecars", 0, "securityContext", "capabilities", "add"],
    },
    {
      name: "sidecar running as root",
      body: () => withSpec({ sidecars: [sidecar({ securityContext: { runAsUser: 0 } })] }),
      status: 422,
      loc: [...RS, "sidecars", 0, "securityContext", "runAsUser"],
    },
    {
      name: "sidecar with runAsNonRoot false",
      body: () => withSpec({ sidecars: [sidecar({ securityContext: { runAsNonRoot: false } })] }),
      status: 422,
      loc: [...RS, "sidecars", 0, "securityContext", "runAsNonRoot"],
    },
    {
      name: "sidecar with an Unconfined seccomp profile",
      body: () => withSpec({ sidecars: [sidecar({ securityContext: { seccompProfile: { type: "Unconfined" } } })] }),
      status: 422,
      loc: [...RS, "sidecars", 0, "securityContext", "seccompProfile", "type"],
    },
    {
      name: "sidecar with a hostPort",
      body: () => withSpec({ sidecars: [sidecar({ ports: [{ containerPort: 80, hostPort: 80 }] })] }),
      status: 422,
      loc: [...RS, "sidecars", 0, "ports", 0, "hostPort"],
    },
    {
      name: "hostNetwork",
      body: () => withSpec({ hostNetwork: true }),
      status: 422,
      loc: [...RS, "hostNetwork"],
    },
    {
      name: "Bidirectional mount propagation",
      body: () =>
        withSpec({
          volumes: [{ name: "scratch", emptyDir: {} }],
          volume_mounts: [{ name: "scratch", mountPath: "/scratch", mountPropagation: "Bidirectional" }],
        }),
      status: 422,
      loc: [...RS, "volume_mounts", 0, "mountPropagation"],
    },
    {
      name: "probe aimed at another host",
      body: () => withSpec({ sidecars: [sidecar({ livenessProbe: { httpGet: { port: 80, host: "10.0.0.1" } } })] }),
      status: 422,
      loc: [...RS, "sidecars", 0, "livenessProbe", "httpGet", "host"],
    },
    {
      name: "Pod Security label on the pods",
      body: () => withSpec({ labels: { "pod-security.kubernetes.io/enforce": "privileged" } }),
      status: 422,
      loc: [...RS, "labels", "pod-security.kubernetes.io/enforce"],
    },
    {
      name: "AppArmor unconfined annotation",
      body: () => withSpec({ annotations: { "container.apparmor.security.beta.kubernetes.io/helper": "unconfined" } }),
      status: 422,
      loc: [...RS, "annotations", "container.apparmor.security.beta.kubernetes.io/helper"],
    },
    {
      name: "a volume named like the platform's API-key volume",
      body: () => withSpec({ volumes: [{ name: "agentplane-api-keys", emptyDir: {} }] }),
      status: 422,
      loc: [...RS, "volumes", 0, "name"],
    },
    // The agent server's own settings
    {
      name: "secrets planting AGENTPLANE_API_KEYS",
      body: () => body({ secrets: [{ name: "AGENTPLANE_API_KEYS", value: "attacker-key" }] }),
      status: 422,
      loc: ["body", "secrets", 0, "name"],
    },
    {
      name: "secrets overriding REDIS_URI",
      body: () => body({ secrets: [{ name: "REDIS_URI", value: "redis://victim-redis:6379" }] }),
      status: 422,
      loc: ["body", "secrets", 0, "name"],
    },
    {
      name: "secrets setting NODE_OPTIONS",
      body: () => body({ secrets: [{ name: "NODE_OPTIONS", value: "--require /tmp/x.js" }] }),
      status: 422,
      loc: ["body", "secrets", 0, "name"],
    },
    {
      name: "secret_references naming AGENTPLANE_API_KEYS_FILE",
      body: () =>
        body({ secret_references: [{ name: "AGENTPLANE_API_KEYS_FILE", secret_name: "shared-db", secret_key: "pw" }] }),
      status: 422,
      loc: ["body", "secret_references", 0, "name"],
    },
    // Namespaces
    {
      name: "k8s_namespace of another workspace",
      body: () => body({ source_config: { listener_config: { k8s_namespace: nsOf(world.h.ids.wsB) } } }),
      status: 422,
      loc: ["body", "source_config", "listener_config", "k8s_namespace"],
    },
    {
      name: "k8s_namespace of the platform's release",
      body: () => body({ source_config: { listener_config: { k8s_namespace: PROVIDERS_NAMESPACE } } }),
      status: 422,
      loc: ["body", "source_config", "listener_config", "k8s_namespace"],
    },
    // Deep and wide JSON where Kubernetes objects are free-form
    {
      name: "deeply nested JSON in volumes",
      raw: () => deep(withSpec({ volumes: [{ name: "deep", emptyDir: {}, extra: MARKER }] })),
      status: 422,
      loc: [...RS, "volumes", 0, "extra"],
    },
    {
      name: "deeply nested JSON in sidecars",
      raw: () => deep(withSpec({ sidecars: [sidecar({ lifecycle: MARKER })] })),
      status: 422,
      loc: [...RS, "sidecars", 0, "lifecycle"],
    },
    {
      name: "deeply nested JSON in init_containers' env",
      raw: () => deep(withSpec({ init_containers: [sidecar({ env: [{ name: "X", valueFrom: MARKER }] })] })),
      status: 422,
      loc: [...RS, "init_containers", 0, "env", 0, "valueFrom", "a"],
    },
    {
      name: "thousands of volumes",
      body: () => withSpec({ volumes: Array.from({ length: 5000 }, (_, i) => ({ name: `v${i}`, emptyDir: {} })) }),
      status: 422,
      loc: [...RS, "volumes"],
    },
    // PATCH and new revisions of one's own deployment
    {
      name: "PATCH: secrets PORT",
      method: "PATCH",
      path: "mine",
      body: () => ({ secrets: [{ name: "PORT", value: "1" }] }),
      status: 422,
      loc: ["body", "secrets", 0, "name"],
    },
    {
      name: "PATCH: privileged init container with hostPath",
      method: "PATCH",
      path: "mine",
      body: () => ({
        source_config: {
          resource_spec: {
            volumes: [{ name: "root", hostPath: { path: "/" } }],
            init_containers: [sidecar({ securityContext: { privileged: true } })],
          },
        },
      }),
      status: 422,
      loc: [...RS, "volumes", 0, "hostPath"],
    },
    {
      name: "PATCH: secret_references to another tenant's Secret",
      method: "PATCH",
      path: "mine",
      body: () => ({
        secret_references: [{ name: "STOLEN", secret_name: victimSecret(world), secret_key: "VICTIM_TOKEN" }],
      }),
      status: 422,
      loc: ["body", "secret_references", 0, "secret_name"],
    },
    {
      name: "new revision: projected serviceAccountToken",
      path: "mine/revisions",
      body: () => ({
        source_config: {
          resource_spec: { volumes: [{ name: "t", projected: { sources: [{ serviceAccountToken: { path: "t" } }] } }] },
        },
      }),
      status: 422,
      loc: [...RS, "volumes", 0, "projected", "sources", 0, "serviceAccountToken"],
    },
    // Another organization's deployment, and workspaces the key may not use
    {
      name: "PATCH another organization's deployment",
      method: "PATCH",
      path: "victim",
      body: () => ({ source_revision_config: { image_uri: "registry.example/evil:1" } }),
      status: 404,
    },
    {
      name: "new revision of another organization's deployment",
      path: "victim/revisions",
      body: () => ({}),
      status: 404,
    },
    {
      name: "redeploy another organization's revision",
      path: "victim/revisions/victim-revision/redeploy",
      status: 404,
    },
    { name: "DELETE another organization's deployment", method: "DELETE", path: "victim", status: 404 },
    {
      name: "create in another organization's workspace",
      body: () => body(),
      headers: () => ({ "x-tenant-id": world.h.ids.wsB }),
      status: 403,
    },
    {
      name: "create in a workspace of the organization the key may not use",
      body: () => body(),
      headers: () => ({ "x-tenant-id": world.h.ids.wsA2 }),
      status: 403,
    },
    {
      name: "PATCH another organization's deployment selecting its workspace",
      method: "PATCH",
      path: "victim",
      body: () => ({ secrets: [{ name: "A", value: "b" }] }),
      headers: () => ({ "x-tenant-id": world.h.ids.wsB }),
      status: 403,
    },
  ];
}
