/**
 * The rules both policy layers enforce on what a tenant's deployment may name: the control plane at
 * the API boundary, and the operator again on custom resources written around the API. One copy, so
 * that what the API accepts the operator accepts too.
 */

/**
 * Annotation an administrator puts on a Secret, ConfigMap or ServiceAccount in a deployment namespace
 * to let deployments of the listed workspaces use it: comma-separated workspace ids, or `*`.
 */
export const SHARED_WITH_ANNOTATION = "agentplane.dev/shared-with-workspaces";

/** Whether `annotations` share their object with `workspaceId`. */
export function sharedWithWorkspace(annotations: Record<string, string> | undefined, workspaceId: string): boolean {
  const value = annotations?.[SHARED_WITH_ANNOTATION];
  if (!value) return false;
  const ids = value.split(",").map((id) => id.trim().toLowerCase());
  return ids.includes("*") || ids.includes(workspaceId.toLowerCase());
}

/**
 * Names the platform sets or relies on in the agent server's environment: its authentication and
 * wiring (the operator sets PORT, REDIS_URI and AGENTPLANE_API_KEYS_FILE; AGENTPLANE_API_KEYS would
 * plant a key that outlives the grant it came from), how Node loads code, the agent server's process
 * settings, and the names the LangSmith reference reserves. Per-deployment tuning the agent server
 * documents for tenants (LOG_LEVEL, CORS_ALLOW_ORIGINS, OTEL_*, LANGSMITH_TRACING, WEBHOOK_ALLOWED_HOSTS,
 * run/cron/store limits) stays settable; control-plane/src/deployments/pod-policy.test.ts checks that every name the
 * agent server reads is one or the other.
 */
const RESERVED_ENV_NAMES: ReadonlySet<string> = new Set([
  // the agent server's wiring and process settings
  "PORT",
  "HOST",
  "REDIS_URI",
  "REDIS_PREFIX",
  "N_WORKERS",
  "BODY_LIMIT",
  "SHUTDOWN_GRACE_MS",
  "LANGGRAPH_JSON",
  // the Node runtime
  "NODE_OPTIONS",
  "NODE_PATH",
  "NODE_ENV",
  "NODE_EXTRA_CA_CERTS",
  "NODE_TLS_REJECT_UNAUTHORIZED",
  "LD_PRELOAD",
  "LD_LIBRARY_PATH",
  // reserved by the LangSmith control plane the API follows
  "LANGCHAIN_TRACING_V2",
  "LANGSMITH_TRACING_V2",
  "LANGCHAIN_ENDPOINT",
  "LANGCHAIN_PROJECT",
  "LANGSMITH_PROJECT",
  "LANGSMITH_LANGGRAPH_GIT_REPO",
  "LANGGRAPH_GIT_REPO_PATH",
  "LANGCHAIN_API_KEY",
  "LANGSMITH_CONTROL_PLANE_API_KEY",
  "POSTGRES_URI",
  "POSTGRES_PASSWORD",
  "DATABASE_URI",
  "LANGSMITH_LANGGRAPH_GIT_REF",
  "LANGSMITH_LANGGRAPH_GIT_REF_SHA",
  "LANGGRAPH_AUTH_TYPE",
  "LANGSMITH_AUTH_ENDPOINT",
  "LANGSMITH_TENANT_ID",
  "LANGSMITH_AUTH_VERIFY_TENANT_ID",
  "LANGSMITH_HOST_PROJECT_ID",
  "LANGSMITH_HOST_PROJECT_NAME",
  "LANGSMITH_HOST_REVISION_ID",
  "LOG_JSON",
  "LOG_DICT_TRACEBACKS",
  "LANGCHAIN_CALLBACKS_BACKGROUND",
  "DD_TRACE_PSYCOPG_ENABLED",
  "DD_TRACE_REDIS_ENABLED",
  "LANGSMITH_DEPLOYMENT_NAME",
  "LANGGRAPH_CLOUD_LICENSE_KEY",
]);

/** Every name under these prefixes is the platform's, including names it has not used yet. */
const RESERVED_ENV_PREFIXES = ["AGENTPLANE_", "KUBERNETES_"];

export function isReservedEnvName(name: string): boolean {
  const upper = name.toUpperCase();
  return RESERVED_ENV_NAMES.has(upper) || RESERVED_ENV_PREFIXES.some((prefix) => upper.startsWith(prefix));
}

/** Label and annotation domains that belong to Kubernetes (Pod Security, AppArmor) or the platform (selectors). */
export const RESERVED_METADATA_DOMAINS = ["kubernetes.io", "k8s.io", "agentplane.dev"];

export function isReservedMetadataKey(key: string): boolean {
  const slash = key.indexOf("/");
  if (slash < 0) return false;
  const domain = key.slice(0, slash).toLowerCase();
  return RESERVED_METADATA_DOMAINS.some((reserved) => domain === reserved || domain.endsWith(`.${reserved}`));
}

/** The operator names its own volumes and containers in the agent pod with this prefix. */
export const RESERVED_NAME_PREFIX = "agentplane-";
