import type { IncomingMessage, ServerResponse } from "node:http";
import { type DeleteOptions, type KubeApi, PATCH_TYPES, type PropagationPolicy, type WriteOptions } from "./api.ts";
import { forbiddenRequest, type UserAuthorizer } from "./authorization.ts";
import { badRequest, KubeError } from "./errors.ts";
import type { Subresource } from "./managed-fields.ts";
import { isObject } from "./patch.ts";
import { fieldManagerOf, mediaType, parseBody, type ResourcePath, readBody } from "./request.ts";
import { apiVersionOf, type ResourceType } from "./resources.ts";
import { fieldSelector, labelSelector } from "./selectors.ts";
import type { KubeObject } from "./store.ts";
import { toTable, wantsTable } from "./table.ts";
import { serveWatch } from "./watch.ts";

export interface HandlerOptions {
  bookmarkIntervalMs: number;
  /** The requesting user's authorizer, when the server emulates authorization. */
  authorize?: UserAuthorizer;
  user?: string;
}

export function sendJson(response: ServerResponse, code: number, body: unknown): void {
  response.writeHead(code, { "Content-Type": "application/json" });
  response.end(JSON.stringify(body));
}

function successStatus(resource: ResourceType, object: KubeObject): Record<string, unknown> {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Success",
    details: { name: object.metadata.name, group: resource.group, kind: resource.plural, uid: object.metadata.uid },
  };
}

function writeOptions(
  query: URLSearchParams,
  request: IncomingMessage,
  subresource: Subresource,
  authorize: UserAuthorizer | undefined,
): WriteOptions {
  // Apply names its manager explicitly; other writes default to the user agent's program name.
  const isApply = mediaType(request) === PATCH_TYPES.apply;
  const fieldManager = isApply ? query.get("fieldManager") : fieldManagerOf(query, request);
  return {
    ...(fieldManager ? { fieldManager } : {}),
    dryRun: query.getAll("dryRun").includes("All"),
    strict: query.get("fieldValidation") === "Strict",
    force: query.get("force") === "true",
    subresource,
    ...(authorize ? { authorize } : {}),
  };
}

/** Items of built-in kinds are served without apiVersion/kind in lists, as the real apiserver does. */
function listItem(resource: ResourceType, object: KubeObject): unknown {
  if (resource.schema) return object;
  const { apiVersion: _apiVersion, kind: _kind, ...rest } = object;
  return rest;
}

function listObjects(api: KubeApi, resource: ResourceType, namespace: string | undefined, query: URLSearchParams) {
  const selectLabels = labelSelector(query.get("labelSelector") ?? undefined);
  const selectFields = fieldSelector(query.get("fieldSelector") ?? undefined);
  return api.store
    .list(resource, namespace)
    .filter((o) => selectLabels(o) && selectFields(o))
    .sort((a, b) =>
      `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`),
    );
}

function list(
  api: KubeApi,
  resource: ResourceType,
  path: ResourcePath,
  query: URLSearchParams,
  accept: string | undefined,
) {
  const all = listObjects(api, resource, path.namespace, query);
  const resourceVersion = String(api.store.resourceVersion);
  const offset = Number(query.get("continue") ? Buffer.from(query.get("continue") ?? "", "base64url").toString() : 0);
  if (!Number.isInteger(offset) || offset < 0) throw badRequest("invalid continue token");
  const limit = Number(query.get("limit") ?? 0);
  const page = limit > 0 ? all.slice(offset, offset + limit) : all.slice(offset);
  const next =
    limit > 0 && offset + limit < all.length ? Buffer.from(String(offset + limit)).toString("base64url") : "";
  const metadata = {
    resourceVersion,
    ...(next ? { continue: next, remainingItemCount: all.length - offset - limit } : {}),
  };
  if (wantsTable(accept)) {
    const table = toTable(resource, page, resourceVersion, query.get("includeObject") ?? "Metadata");
    return { ...table, metadata };
  }
  return {
    kind: `${resource.kind}List`,
    apiVersion: apiVersionOf(resource),
    metadata,
    items: page.map((o) => listItem(resource, o)),
  };
}

function deleteOptions(body: unknown, query: URLSearchParams): DeleteOptions {
  const options = isObject(body) ? body : {};
  const policy = (query.get("propagationPolicy") ?? options.propagationPolicy ?? undefined) as
    | PropagationPolicy
    | undefined;
  if (policy !== undefined && !["Background", "Foreground", "Orphan"].includes(policy)) {
    throw badRequest(`propagationPolicy: Unsupported value: "${policy}"`);
  }
  const orphan = options.orphanDependents === true ? "Orphan" : undefined;
  const dryRun =
    query.getAll("dryRun").includes("All") || (Array.isArray(options.dryRun) && options.dryRun.includes("All"));
  return {
    ...((policy ?? orphan) ? { propagationPolicy: policy ?? orphan } : {}),
    ...(isObject(options.preconditions)
      ? { preconditions: options.preconditions as DeleteOptions["preconditions"] }
      : {}),
    dryRun,
  };
}

/** Serves one request for a resource collection or object. */
export async function handleResource(
  api: KubeApi,
  request: IncomingMessage,
  response: ServerResponse,
  path: ResourcePath,
  query: URLSearchParams,
  options: HandlerOptions,
): Promise<void> {
  const resource = api.resource(path.apiVersion, path.plural);
  if (resource.namespaced && path.name !== undefined && path.namespace === undefined) {
    throw new KubeError(404, "NotFound", "the server could not find the requested resource");
  }
  if (path.subresource !== undefined && (path.subresource !== "status" || !resource.statusSubresource)) {
    throw new KubeError(404, "NotFound", "the server could not find the requested resource");
  }
  const namespace = resource.namespaced ? path.namespace : undefined;
  const subresource: Subresource = path.subresource === "status" ? "status" : "";
  const method = request.method ?? "GET";
  const body = parseBody(method === "GET" ? Buffer.alloc(0) : await readBody(request), mediaType(request));
  const accept = request.headers.accept;

  if (path.name === undefined) {
    if (method === "GET" && ["true", "1"].includes(query.get("watch") ?? "")) {
      const selectLabels = labelSelector(query.get("labelSelector") ?? undefined);
      const selectFields = fieldSelector(query.get("fieldSelector") ?? undefined);
      return serveWatch(api.store, response, {
        resource,
        namespace,
        resourceVersion: query.get("resourceVersion") ?? undefined,
        selector: (o) => selectLabels(o) && selectFields(o),
        allowBookmarks: query.get("allowWatchBookmarks") === "true",
        sendInitialEvents: query.get("sendInitialEvents") === "true",
        timeoutSeconds: query.get("timeoutSeconds") ? Number(query.get("timeoutSeconds")) : undefined,
        bookmarkIntervalMs: options.bookmarkIntervalMs,
        render: wantsTable(accept)
          ? (o) => toTable(resource, [o], o.metadata.resourceVersion, query.get("includeObject") ?? "Metadata")
          : (o) => o,
      });
    }
    if (method === "GET") return sendJson(response, 200, list(api, resource, path, query, accept));
    if (method === "POST")
      return sendJson(
        response,
        201,
        api.create(resource, namespace, body, writeOptions(query, request, "", options.authorize)),
      );
    if (method === "DELETE") {
      const targets = listObjects(api, resource, namespace, query);
      const deleted = targets.map((o) =>
        api.delete(resource, o.metadata.namespace, o.metadata.name, deleteOptions(body, query)),
      );
      return sendJson(response, 200, {
        kind: `${resource.kind}List`,
        apiVersion: apiVersionOf(resource),
        metadata: { resourceVersion: String(api.store.resourceVersion) },
        items: deleted.map((d) => d.object),
      });
    }
    throw new KubeError(405, "MethodNotAllowed", `${method} is not supported on a collection`);
  }

  const name = path.name;
  switch (method) {
    case "GET": {
      const object = api.get(resource, namespace, name);
      if (wantsTable(accept))
        return sendJson(
          response,
          200,
          toTable(resource, [object], object.metadata.resourceVersion, query.get("includeObject") ?? "Metadata"),
        );
      return sendJson(response, 200, object);
    }
    case "PUT":
      return sendJson(
        response,
        200,
        api.update(resource, namespace, name, body, writeOptions(query, request, subresource, options.authorize)),
      );
    case "PATCH": {
      const existed = api.store.get(resource, namespace, name) !== undefined;
      // Server-side apply of a missing object creates it, so it needs `create` as well as `patch`.
      const creates = !existed && mediaType(request) === PATCH_TYPES.apply;
      const create = { verb: "create", group: resource.group, resource: resource.plural, namespace };
      if (creates && options.authorize && !options.authorize(create)) {
        throw forbiddenRequest({ user: options.user ?? "", ...create, name }, resource);
      }
      const writing = writeOptions(query, request, subresource, options.authorize);
      const object = api.patch(resource, namespace, name, mediaType(request), body, writing);
      return sendJson(response, existed ? 200 : 201, object);
    }
    case "DELETE": {
      const { object, removed } = api.delete(resource, namespace, name, deleteOptions(body, query));
      return sendJson(response, removed ? 200 : 202, removed ? successStatus(resource, object) : object);
    }
    default:
      throw new KubeError(405, "MethodNotAllowed", `${method} is not supported`);
  }
}
