import { readFileSync } from "node:fs";
import type { JwtConfig } from "./auth/jwt.ts";
import { type ApiKeyGrant, parseApiKeyGrants } from "./auth/principal.ts";

/**
 * `workspace`: each workspace's deployments go to its own namespace, `<prefix><workspace id>`,
 * created on first use and labelled for the `restricted` Pod Security Standard, so that tenants
 * share neither Secrets nor ServiceAccounts nor a namespace with the platform.
 * `shared`: deployments of every tenant go to the listed namespaces (the first is the default for
 * `listener_config.k8s_namespace`); the layout of releases before tenant namespaces.
 */
export type NamespaceLayout = { kind: "workspace"; prefix: string } | { kind: "shared"; namespaces: string[] };

/** A workspace id is a UUID (36 characters): the prefix gets the rest of a namespace name's 63. */
const MAX_PREFIX_LENGTH = 63 - 36;

/** Everything the control plane reads from its environment, resolved once at start. */
export interface ControlPlaneConfig {
  port: number;
  host: string;
  /** kubeconfig file; absent = `KUBECONFIG`, `~/.kube/config` or the in-cluster service account. */
  kubeconfigPath?: string;
  /** Where deployments go: a namespace per workspace (the default), or namespaces all tenants share. */
  layout: NamespaceLayout;
  /** Namespace of the control plane's own records: OAuth provider and listener ConfigMaps, provider Secrets. */
  providersNamespace: string;
  apiKeys: ApiKeyGrant[];
  /** Bearer-token verification; absent = bearer tokens are refused. */
  jwt?: JwtConfig;
  logLevel: string;
}

/** Bad environment: `main` prints the message and exits with code 2. */
export class ConfigError extends Error {}

const SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

function ownNamespace(): string {
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, "utf8").trim() || "default";
  } catch {
    return "default";
  }
}

function list(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean);
}

const isNamespaceName = (name: string) => /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name) && name.length <= 63;

function namespaceLayout(env: NodeJS.ProcessEnv): NamespaceLayout {
  const kind = env.CONTROL_PLANE_NAMESPACE_LAYOUT || "workspace";
  const namespaces = list(env.CONTROL_PLANE_NAMESPACES);
  if (kind === "workspace") {
    // Refused rather than ignored: after an upgrade, deployments would silently move to new namespaces.
    if (namespaces.length > 0) {
      throw new ConfigError("CONTROL_PLANE_NAMESPACES needs CONTROL_PLANE_NAMESPACE_LAYOUT=shared");
    }
    const prefix = env.CONTROL_PLANE_TENANT_NAMESPACE_PREFIX ?? "agentplane-";
    if (prefix.length > MAX_PREFIX_LENGTH || !/^[a-z]([-a-z0-9]*)?$/.test(prefix)) {
      throw new ConfigError(
        `CONTROL_PLANE_TENANT_NAMESPACE_PREFIX: '${prefix}' must be lowercase letters, digits and '-', start with a letter and be at most ${MAX_PREFIX_LENGTH} characters`,
      );
    }
    return { kind, prefix };
  }
  if (kind !== "shared") throw new ConfigError("CONTROL_PLANE_NAMESPACE_LAYOUT must be 'workspace' or 'shared'");
  if (namespaces.length === 0) namespaces.push(ownNamespace());
  const invalid = namespaces.find((ns) => !isNamespaceName(ns));
  if (invalid) throw new ConfigError(`CONTROL_PLANE_NAMESPACES: '${invalid}' is not a namespace name`);
  return { kind, namespaces };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): ControlPlaneConfig {
  const port = Number(env.PORT ?? "1985");
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError("PORT must be an integer 0..65535");
  const layout = namespaceLayout(env);

  let apiKeys: ApiKeyGrant[] = [];
  if (env.CONTROL_PLANE_API_KEYS_FILE) {
    try {
      apiKeys = parseApiKeyGrants(readFileSync(env.CONTROL_PLANE_API_KEYS_FILE, "utf8"));
    } catch (error) {
      throw new ConfigError(`CONTROL_PLANE_API_KEYS_FILE: ${(error as Error).message}`);
    }
  }
  const jwt: JwtConfig | undefined =
    env.CONTROL_PLANE_JWT_SECRET || env.CONTROL_PLANE_JWKS_URL
      ? {
          secret: env.CONTROL_PLANE_JWT_SECRET || undefined,
          jwksUrl: env.CONTROL_PLANE_JWKS_URL || undefined,
          issuer: env.CONTROL_PLANE_JWT_ISSUER || undefined,
          audience: env.CONTROL_PLANE_JWT_AUDIENCE || undefined,
          organizationClaim: env.CONTROL_PLANE_JWT_ORGANIZATION_CLAIM || "organization_id",
          workspacesClaim: env.CONTROL_PLANE_JWT_WORKSPACES_CLAIM || "workspace_ids",
        }
      : undefined;
  if (apiKeys.length === 0 && !jwt) {
    throw new ConfigError(
      "no credentials configured: set CONTROL_PLANE_API_KEYS_FILE and/or CONTROL_PLANE_JWT_SECRET / CONTROL_PLANE_JWKS_URL",
    );
  }
  return {
    port,
    host: env.HOST ?? "0.0.0.0",
    layout,
    providersNamespace:
      env.CONTROL_PLANE_PROVIDERS_NAMESPACE ||
      (layout.kind === "shared" ? layout.namespaces[0] : undefined) ||
      ownNamespace(),
    apiKeys,
    jwt,
    logLevel: env.LOG_LEVEL ?? "info",
  };
}
