import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CrdManifest } from "@agentplane/crds";
import { stringify } from "yaml";
import { KubeApi } from "./api.ts";
import { type Attributes, type Authorizer, forbiddenRequest } from "./authorization.ts";
import { loadBuiltinValidators } from "./builtin-validation.ts";
import { coreVersions, group, groupList, resourceList, VERSION_INFO } from "./discovery.ts";
import { KubeError } from "./errors.ts";
import { GarbageCollector } from "./gc.ts";
import { handleResource, sendJson } from "./handlers.ts";
import { runHpaController } from "./hpa-controller.ts";
import { groupVersionDocument, openApiIndex } from "./openapi.ts";
import { servePodLog } from "./pod-log.ts";
import { parseResourcePath, type ResourcePath } from "./request.ts";
import { runQuotaController } from "./resource-quota.ts";
import { builtinResourceTypes, crdResourceTypes, ResourceRegistry } from "./resources.ts";
import { type KubeObject, ObjectStore } from "./store.ts";

export interface KubeApiServerOptions {
  /** CustomResourceDefinitions served from the start (more can be created through the API). */
  crds?: CrdManifest[];
  port?: number;
  host?: string;
  /** Namespaces that exist from the start (default: default, kube-system, kube-public). */
  namespaces?: string[];
  /** How many changes watches can resume across (older resourceVersions get 410 Gone). */
  retainedEvents?: number;
  /** Interval of BOOKMARK events on watches that allow them. */
  bookmarkIntervalMs?: number;
  /** Called once per request with method, path and status code. */
  log?: (line: string) => void;
  /**
   * Authorization, off by default (every client is an administrator). When set, each resource request
   * is authorized for the user its bearer token names (the token is the user name; the kubeconfig's
   * token `agentplane-test` is yours to allow), a refusal is RBAC's 403, and the admission checks that
   * depend on the user (OwnerReferencesPermissionEnforcement) run.
   */
  authorize?: Authorizer;
}

export interface KubeApiServer {
  url: string;
  /** A kubeconfig (in a temp dir, removed on close) that kubectl and @kubernetes/client-node accept. */
  kubeconfigPath: string;
  /** Server-side object semantics, for assertions and for writes that bypass HTTP (e.g. a test kubelet). */
  api: KubeApi;
  /** A copy of one stored object, or undefined. */
  get(apiVersion: string, plural: string, namespace: string | undefined, name: string): KubeObject | undefined;
  /** Copies of the stored objects of a kind (all namespaces when `namespace` is undefined). */
  list(apiVersion: string, plural: string, namespace?: string): KubeObject[];
  close(): Promise<void>;
}

function kubeconfig(url: string): string {
  const name = "agentplane-test";
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name, cluster: { server: url, "insecure-skip-tls-verify": true } }],
    users: [{ name, user: { token: name } }],
    contexts: [{ name, context: { cluster: name, user: name, namespace: "default" } }],
    "current-context": name,
  });
}

/** Registers the resource types of CRDs created through the API (and drops those of deleted ones). */
function serveCustomResources(api: KubeApi): () => void {
  return api.store.subscribe((event) => {
    if (event.resource.plural !== "customresourcedefinitions") return;
    const crd = event.object as unknown as CrdManifest;
    api.registry.remove(crd.spec.group, crd.spec.names.plural);
    if (event.type !== "DELETED") for (const type of crdResourceTypes(crd)) api.registry.add(type);
    if (event.type !== "ADDED") return;
    setImmediate(() => {
      const current = api.store.get(event.resource, undefined, event.object.metadata.name);
      if (!current) return;
      const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
      const established = (type: string, reason: string) => ({
        type,
        status: "True",
        reason,
        message: "",
        lastTransitionTime: now,
      });
      const status = {
        acceptedNames: crd.spec.names,
        storedVersions: crd.spec.versions.filter((v) => v.storage).map((v) => v.name),
        conditions: [established("NamesAccepted", "NoConflicts"), established("Established", "InitialNamesAccepted")],
      };
      api.store.write(event.resource, "MODIFIED", { ...current, status }, current);
    });
  });
}

/** The authorizer's view of a resource request (undefined for a resource the server does not serve: 404 follows). */
function requestAttributes(
  user: string,
  method: string,
  path: ResourcePath,
  query: URLSearchParams,
  api: KubeApi,
): Attributes | undefined {
  const resource = api.registry.find(path.apiVersion, path.plural);
  if (!resource) return undefined;
  const watch = ["true", "1"].includes(query.get("watch") ?? "");
  const verbs: Record<string, string> = {
    GET: path.name ? "get" : watch ? "watch" : "list",
    POST: "create",
    PUT: "update",
    PATCH: "patch",
    DELETE: path.name ? "delete" : "deletecollection",
  };
  return {
    user,
    verb: verbs[method] ?? method.toLowerCase(),
    group: resource.group,
    resource: path.subresource ? `${resource.plural}/${path.subresource}` : resource.plural,
    ...(resource.namespaced && path.namespace ? { namespace: path.namespace } : {}),
    ...(path.name ? { name: path.name } : {}),
  };
}

/** Discovery and OpenAPI documents, or undefined when the path is not one. */
function discoveryDocument(api: KubeApi, pathname: string, serverAddress: string): unknown {
  if (pathname === "/version") return VERSION_INFO;
  if (pathname === "/api") return coreVersions(serverAddress);
  if (pathname === "/apis") return groupList(api.registry);
  if (pathname === "/api/v1") return resourceList(api.registry, "v1");
  if (pathname === "/openapi/v3") return openApiIndex(api.registry);
  if (pathname.startsWith("/openapi/v3/")) {
    return groupVersionDocument(api.registry, pathname.replace(/^\/openapi\/v3\/apis?\//, ""));
  }
  const apis = /^\/apis\/([^/]+)(\/[^/]+)?$/.exec(pathname);
  if (!apis) return undefined;
  return apis[2] ? resourceList(api.registry, `${apis[1]}${apis[2]}`) : group(api.registry, apis[1] ?? "");
}

function route(api: KubeApi, serverAddress: () => string, options: KubeApiServerOptions) {
  const isNamespaced = (apiVersion: string, plural: string) =>
    api.registry.find(apiVersion, plural)?.namespaced === true;
  return async (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    const pathname = url.pathname.replace(/\/+$/, "") || "/";
    response.on("finish", () => options.log?.(`${request.method} ${request.url} ${response.statusCode}`));
    try {
      if (["/healthz", "/readyz", "/livez"].includes(pathname)) {
        response.writeHead(200, { "Content-Type": "text/plain" });
        return void response.end("ok");
      }
      const discovery = discoveryDocument(api, pathname, serverAddress());
      if (discovery) return sendJson(response, 200, discovery);
      const path = parseResourcePath(pathname, isNamespaced);
      if (!path) throw new KubeError(404, "NotFound", "the server could not find the requested resource");
      const user = /^Bearer (.+)$/.exec(request.headers.authorization ?? "")?.[1] ?? "system:anonymous";
      const authorize = options.authorize;
      if (authorize) {
        const attributes = requestAttributes(user, request.method ?? "GET", path, url.searchParams, api);
        if (attributes && !authorize(attributes))
          throw forbiddenRequest(attributes, api.resource(path.apiVersion, path.plural));
      }
      if (path.apiVersion === "v1" && path.plural === "pods" && path.subresource === "log" && path.name) {
        return await servePodLog(api, request, response, path.namespace ?? "", path.name, url.searchParams);
      }
      await handleResource(api, request, response, path, url.searchParams, {
        bookmarkIntervalMs: options.bookmarkIntervalMs ?? 5000,
        ...(authorize ? { authorize: (attributes) => authorize({ user, ...attributes }), user } : {}),
      });
    } catch (error) {
      const failure =
        error instanceof KubeError ? error : new KubeError(500, "InternalError", `Internal error: ${String(error)}`);
      if (response.headersSent) return void response.end();
      sendJson(response, failure.code, failure.status());
    }
  };
}

/** Starts the Kubernetes API test server (see README.md in this folder). */
export async function startKubeApiServer(options: KubeApiServerOptions = {}): Promise<KubeApiServer> {
  const registry = new ResourceRegistry(builtinResourceTypes(await loadBuiltinValidators()));
  const api = new KubeApi(registry, new ObjectStore(options.retainedEvents ?? 10_000));
  const stopServingCustomResources = serveCustomResources(api);
  const collector = new GarbageCollector(api);
  const stopControllers = [runHpaController(api), runQuotaController(api)];
  for (const namespace of options.namespaces ?? ["default", "kube-system", "kube-public"]) {
    api.create(api.resource("v1", "namespaces"), undefined, { metadata: { name: namespace } });
  }
  const crds = api.resource("apiextensions.k8s.io/v1", "customresourcedefinitions");
  for (const crd of options.crds ?? []) api.create(crds, undefined, structuredClone(crd));

  const host = options.host ?? "127.0.0.1";
  let serverAddress = host;
  const server = createServer((request, response) => void handler(request, response));
  const handler = route(api, () => serverAddress, options);
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const { port } = server.address() as AddressInfo;
  serverAddress = `${host}:${port}`;
  const url = `http://${host}:${port}`;
  const directory = mkdtempSync(join(tmpdir(), "kube-apiserver-"));
  const kubeconfigPath = join(directory, "kubeconfig");
  writeFileSync(kubeconfigPath, kubeconfig(url));

  const lookup = (apiVersion: string, plural: string) => api.resource(apiVersion, plural);
  return {
    url,
    kubeconfigPath,
    api,
    get: (apiVersion, plural, namespace, name) => api.store.get(lookup(apiVersion, plural), namespace, name),
    list: (apiVersion, plural, namespace) => structuredClone(api.store.list(lookup(apiVersion, plural), namespace)),
    close: async () => {
      collector.stop();
      for (const stop of stopControllers) stop();
      stopServingCustomResources();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
