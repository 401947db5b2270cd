import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import { Agent, type Dispatcher } from "undici";
import { parse } from "yaml";

/**
 * Where the API server is and how to authenticate: what the operator needs from a kubeconfig.
 * (Our own small loader for the common cases — in-cluster, token, client certificate: importing
 * @kubernetes/client-node pulls in every generated API model, ~85 MB of resident memory for code the
 * operator never calls. Only exec and auth-provider credentials load it, on demand.)
 */
export interface KubeConnection {
  server: string;
  dispatcher: Dispatcher;
  /** Authorization headers, re-read on every call so rotated tokens are picked up. */
  headers(): Record<string, string> | Promise<Record<string, string>>;
  /** The kubeconfig file this came from (undefined in-cluster). */
  source?: string;
}

const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

interface KubeconfigFile {
  "current-context"?: string;
  contexts?: { name: string; context: { cluster: string; user?: string } }[];
  clusters?: { name: string; cluster: Record<string, string | boolean | undefined> }[];
  users?: { name: string; user: Record<string, unknown> }[];
}

/** client-node's `loadFromDefault` order: $KUBECONFIG (first file), ~/.kube/config, in-cluster. */
export function loadKubeConnection(env: NodeJS.ProcessEnv = process.env): KubeConnection {
  const fromEnv = env.KUBECONFIG?.split(":").find((p) => p && existsSync(p));
  if (fromEnv) return connectionFromKubeconfig(fromEnv);
  const home = join(homedir(), ".kube", "config");
  if (existsSync(home)) return connectionFromKubeconfig(home);
  if (env.KUBERNETES_SERVICE_HOST) return inClusterConnection(env);
  throw new Error("no kubeconfig: set KUBECONFIG, create ~/.kube/config, or run in a cluster");
}

function inClusterConnection(env: NodeJS.ProcessEnv): KubeConnection {
  const host = env.KUBERNETES_SERVICE_HOST as string;
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${env.KUBERNETES_SERVICE_PORT ?? "443"}`;
  const tokenFile = join(SERVICE_ACCOUNT_DIR, "token");
  return {
    server,
    dispatcher: new Agent({ connect: { ca: readFileSync(join(SERVICE_ACCOUNT_DIR, "ca.crt")) } }),
    headers: cachedTokenHeaders(tokenFile),
  };
}

/** Bound service-account tokens rotate; re-reading the file once a minute is what client-go does too. */
function cachedTokenHeaders(tokenFile: string): () => Record<string, string> {
  let cached: { headers: Record<string, string>; at: number } | undefined;
  return () => {
    if (!cached || Date.now() - cached.at > 60_000) {
      cached = { headers: { authorization: `Bearer ${readFileSync(tokenFile, "utf8").trim()}` }, at: Date.now() };
    }
    return cached.headers;
  };
}

export function connectionFromKubeconfig(path: string): KubeConnection {
  const file = parse(readFileSync(path, "utf8")) as KubeconfigFile;
  const contextName = file["current-context"];
  const context = file.contexts?.find((c) => c.name === contextName)?.context;
  if (!context) throw new Error(`kubeconfig ${path}: current context "${contextName}" not found`);
  const cluster = file.clusters?.find((c) => c.name === context.cluster)?.cluster;
  if (!cluster?.server) throw new Error(`kubeconfig ${path}: cluster "${context.cluster}" has no server`);
  const user = file.users?.find((u) => u.name === context.user)?.user ?? {};
  const base = dirname(path);
  const read = (data: unknown, file: unknown): Buffer | undefined => {
    if (typeof data === "string") return Buffer.from(data, "base64");
    if (typeof file === "string") return readFileSync(isAbsolute(file) ? file : join(base, file));
    return undefined;
  };
  const insecure = cluster["insecure-skip-tls-verify"] === true;
  const dispatcher = new Agent({
    connect: {
      ca: read(cluster["certificate-authority-data"], cluster["certificate-authority"]),
      cert: read(user["client-certificate-data"], user["client-certificate"]),
      key: read(user["client-key-data"], user["client-key"]),
      rejectUnauthorized: !insecure,
    },
  });
  let headers: KubeConnection["headers"] = () => ({});
  if (user.exec || user["auth-provider"]) {
    headers = pluginCredentialHeaders(path);
  } else if (typeof user.token === "string") {
    const value = { authorization: `Bearer ${user.token}` };
    headers = () => value;
  } else if (typeof user.tokenFile === "string") {
    headers = cachedTokenHeaders(isAbsolute(user.tokenFile) ? user.tokenFile : join(base, user.tokenFile));
  } else if (typeof user.username === "string") {
    const basic = Buffer.from(`${user.username}:${String(user.password ?? "")}`).toString("base64");
    headers = () => ({ authorization: `Basic ${basic}` });
  }
  return { server: String(cluster.server).replace(/\/$/, ""), dispatcher, headers, source: path };
}

/**
 * exec (EKS, GKE, …) and auth-provider credentials, resolved by @kubernetes/client-node, which also
 * caches and refreshes the tokens they produce.
 */
function pluginCredentialHeaders(path: string): () => Promise<Record<string, string>> {
  const kubeConfig = import("@kubernetes/client-node").then(({ KubeConfig }) => {
    const config = new KubeConfig();
    config.loadFromFile(path);
    return config;
  });
  return async () => {
    const options: { headers?: Record<string, string> } = { headers: {} };
    await (await kubeConfig).applyToHTTPSOptions(options);
    return options.headers ?? {};
  };
}
