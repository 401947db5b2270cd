import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { KubeManifest } from "./helm.ts";

/**
 * RBAC checked from outside: the API calls a component makes, recorded by a proxy in front of the
 * API server, and whether the rules a rendered chart binds to its ServiceAccount allow each
 * (test/helm-rbac.test.ts).
 */

export interface ApiCall {
  verb: string;
  group: string;
  resource: string;
  namespace?: string;
  name?: string;
}

/** `GET /apis/apps/v1/namespaces/x/deployments/y` → get apps deployments in x; discovery paths → undefined. */
export function toApiCall(method: string, url: string): ApiCall | undefined {
  const { pathname, searchParams } = new URL(url, "http://x");
  const core = /^\/api\/v1\/(.+)$/.exec(pathname);
  const named = /^\/apis\/([^/]+)\/[^/]+\/(.+)$/.exec(pathname);
  const rest = core?.[1] ?? named?.[2];
  if (!rest) return undefined;
  const segments = rest.split("/").map(decodeURIComponent);
  const namespaced = segments[0] === "namespaces" && segments.length >= 3;
  const [resource, name, subresource] = namespaced ? segments.slice(2) : segments;
  const watch = searchParams.get("watch") === "true" || searchParams.get("watch") === "1";
  const verbs: Record<string, string> = {
    GET: name ? "get" : watch ? "watch" : "list",
    POST: "create",
    PUT: "update",
    PATCH: "patch",
    DELETE: name ? "delete" : "deletecollection",
  };
  return {
    verb: verbs[method] ?? method.toLowerCase(),
    group: named?.[1] ?? "",
    resource: subresource ? `${resource}/${subresource}` : (resource ?? ""),
    ...(namespaced ? { namespace: segments[1] } : {}),
    ...(name ? { name } : {}),
  };
}

export interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/** The rules bound to a ServiceAccount, each with the namespace it applies in (undefined = cluster-wide). */
export function rulesFor(
  manifests: KubeManifest[],
  serviceAccount: string,
  serviceAccountNamespace: string,
): { namespace?: string; rule: Rule }[] {
  const roles = (kind: string, name: string, namespace?: string) =>
    manifests.filter(
      (m) =>
        m.kind === kind && m.metadata.name === name && (kind === "ClusterRole" || m.metadata.namespace === namespace),
    );
  return manifests
    .filter((m) => m.kind === "RoleBinding" || m.kind === "ClusterRoleBinding")
    .filter((b) =>
      b.subjects.some(
        (s: any) => s.kind === "ServiceAccount" && s.name === serviceAccount && s.namespace === serviceAccountNamespace,
      ),
    )
    .flatMap((binding) => {
      const scope = binding.kind === "RoleBinding" ? binding.metadata.namespace : undefined;
      return roles(binding.roleRef.kind, binding.roleRef.name, binding.metadata.namespace).flatMap((role) =>
        (role.rules as Rule[]).map((rule) => ({ namespace: scope, rule })),
      );
    });
}

const matches = (list: string[], value: string) => list.includes(value) || list.includes("*");

/** Whether one of `rules` allows `call`, as the API server's RBAC authorizer decides. */
export function allowed(rules: { namespace?: string; rule: Rule }[], call: ApiCall): boolean {
  return rules.some(
    ({ namespace, rule }) =>
      (namespace === undefined || namespace === call.namespace) &&
      matches(rule.apiGroups, call.group) &&
      matches(rule.resources, call.resource) &&
      matches(rule.verbs, call.verb) &&
      (rule.resourceNames === undefined || (call.name !== undefined && rule.resourceNames.includes(call.name))),
  );
}

/** A proxy in front of the API server that remembers every request passing through. */
export async function recordingProxy(
  target: string,
): Promise<{ url: string; calls: ApiCall[]; close(): Promise<void> }> {
  const calls: ApiCall[] = [];
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    const call = toApiCall(req.method ?? "GET", req.url ?? "/");
    if (call) calls.push(call);
    const forward = httpRequest(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (response) => {
        res.writeHead(response.statusCode ?? 502, response.headers);
        res.flushHeaders(); // a watch sends its headers long before its first event
        response.pipe(res);
      },
    );
    forward.on("error", () => res.destroy());
    res.on("close", () => forward.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
