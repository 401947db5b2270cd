import type { AgentDeployment, Resources, RevisionTemplate } from "@agentplane/crds";
import { DEPLOYMENT_ID } from "./fixtures.ts";

type Json = any;

const OTHER = "9b1d7c4e-2f3a-4b5c-8d6e-7f8091a2b3c4";
export const OWN_SECRET = `${DEPLOYMENT_ID}-secrets`;
export const OTHER_SECRET = `${OTHER}-secrets`;

/** A sidecar the restricted profile admits as written: attacks change one thing about it. */
const SAFE_SECURITY_CONTEXT = {
  runAsNonRoot: true,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ["ALL"] },
  seccompProfile: { type: "RuntimeDefault" },
};
export const sidecar = (extra: Json = {}, securityContext: Json = {}) => ({
  name: "proxy",
  image: "envoy",
  ...extra,
  securityContext: { ...SAFE_SECURITY_CONTEXT, ...securityContext },
});

export interface Attack {
  /** The field the policy must name (without the kind prefix). */
  field: string;
  template?: Partial<RevisionTemplate>;
  resources?: Resources;
  deployment?: Partial<AgentDeployment["spec"]>;
  /** What the restricted profile finds in the pod as it was rendered before the policy, if anything. */
  restricted?: RegExp;
}

const r = "spec.template.resources";

/** Every way into another tenant or the node that issue #15 lists, as a custom resource could carry it. */
export const ATTACKS: Record<string, Attack> = {
  "secret reference to another deployment's Secret": {
    field: "spec.template.secretReferences[0].secretName",
    template: { secretReferences: [{ name: "STOLEN", secretName: OTHER_SECRET, secretKey: "OPENAI_API_KEY" }] },
  },
  "secret reference to an OAuth provider Secret of another organization": {
    field: "spec.template.secretReferences[0].secretName",
    template: { secretReferences: [{ name: "IDP", secretName: "oauth-provider-acme", secretKey: "client_secret" }] },
  },
  "envFrom of another deployment's Secret": {
    field: "spec.template.secretName",
    template: { secretName: OTHER_SECRET },
  },
  "reserved env name planting an API key": {
    field: "spec.template.secretReferences[0].name",
    template: { secretReferences: [{ name: "AGENTPLANE_API_KEYS", secretName: OWN_SECRET, secretKey: "k" }] },
  },
  "reserved env name NODE_OPTIONS": {
    field: "spec.template.secretReferences[0].name",
    template: { secretReferences: [{ name: "NODE_OPTIONS", secretName: OWN_SECRET, secretKey: "k" }] },
  },
  "secret volume of another tenant's Secret": {
    field: `${r}.volumes[0].secret.secretName`,
    resources: { volumes: [{ name: "loot", secret: { secretName: OTHER_SECRET } }] },
  },
  "projected secret of another tenant": {
    field: `${r}.volumes[0].projected.sources[0].secret.name`,
    resources: { volumes: [{ name: "loot", projected: { sources: [{ secret: { name: OTHER_SECRET } }] } }] },
  },
  "service account of the control plane": {
    field: `${r}.serviceAccountName`,
    resources: { serviceAccountName: "agentplane-control-plane" },
  },
  "projected service account token": {
    field: `${r}.volumes[0].projected.sources[0].serviceAccountToken`,
    resources: {
      volumes: [{ name: "token", projected: { sources: [{ serviceAccountToken: { path: "token" } }] } }],
    },
  },
  "hostPath / volume": {
    field: `${r}.volumes[0].hostPath`,
    resources: { volumes: [{ name: "root", hostPath: { path: "/" } }] },
    restricted: /hostPath volumes/,
  },
  "nfs volume": {
    field: `${r}.volumes[0].nfs`,
    resources: { volumes: [{ name: "share", nfs: { server: "10.0.0.1", path: "/" } }] },
    restricted: /volume types: .* is nfs/,
  },
  "privileged sidecar": {
    field: `${r}.sidecars[0].securityContext.privileged`,
    resources: { sidecars: [sidecar({}, { privileged: true })] },
    restricted: /privileged: spec\.containers\[1\]/,
  },
  "init container running as root": {
    field: `${r}.initContainers[0].securityContext.runAsUser`,
    resources: { initContainers: [sidecar({ name: "init" }, { runAsUser: 0 })] },
    restricted: /non-root user: spec\.initContainers\[0\]/,
  },
  "sidecar allowed to run as root": {
    field: `${r}.sidecars[0].securityContext.runAsNonRoot`,
    resources: { sidecars: [sidecar({}, { runAsNonRoot: false })] },
    restricted: /non-root: spec\.containers\[1\]/,
  },
  "sidecar escalating privileges": {
    field: `${r}.sidecars[0].securityContext.allowPrivilegeEscalation`,
    resources: { sidecars: [sidecar({}, { allowPrivilegeEscalation: true })] },
    restricted: /privilege escalation: spec\.containers\[1\]/,
  },
  "sidecar adding SYS_ADMIN": {
    field: `${r}.sidecars[0].securityContext.capabilities.add`,
    resources: { sidecars: [sidecar({}, { capabilities: { drop: ["ALL"], add: ["SYS_ADMIN"] } })] },
    restricted: /adds SYS_ADMIN/,
  },
  "sidecar on a host port": {
    field: `${r}.sidecars[0].ports[0].hostPort`,
    resources: { sidecars: [sidecar({ ports: [{ containerPort: 22, hostPort: 22 }] })] },
    restricted: /host ports/,
  },
  "sidecar without seccomp": {
    field: `${r}.sidecars[0].securityContext.seccompProfile.type`,
    resources: { sidecars: [sidecar({}, { seccompProfile: { type: "Unconfined" } })] },
    restricted: /seccomp: spec\.containers\[1\] is Unconfined/,
  },
  "sidecar with an unmasked /proc": {
    field: `${r}.sidecars[0].securityContext.procMount`,
    resources: { sidecars: [sidecar({}, { procMount: "Unmasked" })] },
    restricted: /\/proc mount/,
  },
  "sidecar with a custom SELinux type": {
    field: `${r}.sidecars[0].securityContext.seLinuxOptions`,
    resources: { sidecars: [sidecar({}, { seLinuxOptions: { type: "spc_t" } })] },
    restricted: /SELinux/,
  },
  "AppArmor unconfined by annotation": {
    field: `${r}.annotations["container.apparmor.security.beta.kubernetes.io/proxy"]`,
    resources: {
      annotations: { "container.apparmor.security.beta.kubernetes.io/proxy": "unconfined" },
      sidecars: [sidecar()],
    },
    restricted: /AppArmor: annotation/,
  },
  "sidecar env from another deployment's Secret": {
    field: `${r}.sidecars[0].env[0].valueFrom.secretKeyRef.name`,
    resources: {
      sidecars: [sidecar({ env: [{ name: "X", valueFrom: { secretKeyRef: { name: OTHER_SECRET, key: "k" } } }] })],
    },
  },
  "init container envFrom another deployment's Secret": {
    field: `${r}.initContainers[0].envFrom[0].secretRef.name`,
    resources: { initContainers: [sidecar({ name: "init", envFrom: [{ secretRef: { name: OTHER_SECRET } }] })] },
  },
  "image pull secret of another tenant": {
    field: `${r}.imagePullSecrets[0].name`,
    resources: { imagePullSecrets: [{ name: `${OTHER}-registry` }] },
  },
  "platform label spoofing the selector of another deployment's Redis": {
    field: `${r}.labels["agentplane.dev/deployment-id"]`,
    resources: { labels: { "agentplane.dev/deployment-id": OTHER } },
  },
  "external Redis URL from another deployment's Secret": {
    field: "spec.redis.externalUrlSecretRef.name",
    deployment: { redis: { externalUrlSecretRef: { name: OTHER_SECRET, key: "REDIS_URI" } } },
  },
  "API-key hashes of another deployment": {
    field: "spec.apiKeysSecretName",
    deployment: { apiKeysSecretName: `${OTHER}-api-keys` },
  },
};
