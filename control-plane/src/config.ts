import { readFileSync } from "node:fs";
import type { JwtConfig } from "./auth/jwt.ts";
import { type ApiKeyGrant, parseApiKeyGrants } from "./auth/principal.ts";

/** Everything the control plane reads from its environment, resolved once at start. */
export interface ControlPlaneConfig {
  port: number;
  host: string;
  /** kubeconfig file; absent = `KUBECONFIG`, `~/.kube/config` or the in-cluster service account. */
  kubeconfigPath?: string;
  /** Namespaces deployments may go to; the first is the default for `listener_config.k8s_namespace`. */
  namespaces: string[];
  /** Namespace of the OAuth provider ConfigMaps and Secrets. */
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

export function loadConfig(env: NodeJS.ProcessEnv = process.env): ControlPlaneConfig {
  const port = Number(env.PORT ?? "1985");
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError("PORT must be an integer 0..65535");
  const namespaces = list(env.CONTROL_PLANE_NAMESPACES);
  if (namespaces.length === 0) namespaces.push(ownNamespace());
  const invalid = namespaces.find((ns) => !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(ns));
  if (invalid) throw new ConfigError(`CONTROL_PLANE_NAMESPACES: '${invalid}' is not a namespace name`);

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
    namespaces,
    providersNamespace: env.CONTROL_PLANE_PROVIDERS_NAMESPACE || (namespaces[0] ?? "default"),
    apiKeys,
    jwt,
    logLevel: env.LOG_LEVEL ?? "info",
  };
}
