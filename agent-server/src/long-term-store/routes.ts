import { type AnyRoute, defineRoute, forbidden, HttpError, notFound, payloadTooLarge } from "@agentplane/common";
import { InvalidNamespaceError, type Item } from "@langchain/langgraph-checkpoint";
import type { ServerContext } from "../context.ts";
import { type AuthFilter, authorize, matchesAuthFilter } from "../custom-auth/authorize.ts";
import { requestAuth } from "../custom-auth/module.ts";
import {
  ListNamespacesResponseSchema,
  SearchItemsResponseSchema,
  StoreDeleteSchema,
  StoreGetQuerySchema,
  StoreItemSchema,
  StoreNamespacesSchema,
  StorePutSchema,
  StoreSearchSchema,
} from "./schemas.ts";
import type { StoreApiSettings } from "./settings.ts";

const tag = "Store";

const itemBody = (item: Item) => ({
  namespace: item.namespace,
  key: item.key,
  value: item.value,
  created_at: new Date(item.createdAt).toISOString(),
  updated_at: new Date(item.updatedAt).toISOString(),
});

/** The store rejects what the request schema cannot see (the reserved `langgraph` root): a 422, not a 500. */
async function validated<T>(operation: () => Promise<T>, loc: string): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (error instanceof InvalidNamespaceError) {
      throw new HttpError(422, [{ loc: ["body", loc], msg: error.message, type: "value_error" }]);
    }
    throw error;
  }
}

/** What an auth filter on the store sees, as on the reference: the value's fields, `namespace` and `key`. */
const storeAuthMatches = (filter: AuthFilter | undefined, namespace: string[], key?: string, value?: unknown) =>
  matchesAuthFilter(
    {
      ...(value && typeof value === "object" ? (value as Record<string, unknown>) : {}),
      namespace,
      ...(key !== undefined && { key }),
    },
    filter,
  );

/** Under an auth filter, searches read this many candidates a page, and give up (400) after this many. */
const AUTH_SCAN_PAGE = 1000;
const AUTH_SCAN_LIMIT = 10_000;

/**
 * The page `offset`/`limit` of what `read` yields that passes `keep`, reading candidates a page at
 * a time, as the reference does: a filter no index answers costs a bounded scan, never a leak.
 */
async function filteredPage<T>(
  read: (offset: number, limit: number) => Promise<T[]>,
  keep: (candidate: T) => boolean,
  offset: number,
  limit: number,
): Promise<T[]> {
  const kept: T[] = [];
  let scanned = 0;
  while (kept.length < offset + limit && scanned < AUTH_SCAN_LIMIT) {
    const size = Math.min(AUTH_SCAN_PAGE, AUTH_SCAN_LIMIT - scanned);
    const candidates = await read(scanned, size);
    scanned += candidates.length;
    kept.push(...candidates.filter(keep));
    if (candidates.length < size) return kept.slice(offset, offset + limit);
  }
  if (kept.length < offset + limit) {
    throw new HttpError(400, "Authenticated store query exceeded maximum scan limit. Narrow the namespace or filters.");
  }
  return kept.slice(offset, offset + limit);
}

/**
 * `/store/*`: the graphs' long-term memory (`config.store`) over HTTP, same items, same TTLs.
 * Under custom auth the `store:*` handlers may rewrite the namespace (per-user namespaces) and
 * return a filter on the item (its value's fields, `namespace`, `key`): an item it filters out
 * is a 404 to read, replace or delete, and never found by a search.
 */
export function storeRoutes(ctx: ServerContext, settings: StoreApiSettings): AnyRoute[] {
  const { store } = ctx.storage;
  return [
    defineRoute({
      method: "put",
      path: "/store/items",
      operationId: "put_item",
      tag,
      summary: "Store or replace an item (ttl in minutes, null = never expires)",
      body: StorePutSchema,
      response: null,
      status: 204,
      errors: [413],
      handler: async ({ body, req }) => {
        const size = Buffer.byteLength(JSON.stringify(body.value));
        if (size > settings.maxValueBytes) {
          throw payloadTooLarge(`Item value is ${size} bytes; the limit is ${settings.maxValueBytes} bytes`);
        }
        const target = { namespace: body.namespace, key: body.key, value: body.value };
        const filter = await authorize(requestAuth(req), "store:put", target);
        if (filter) {
          const existing = await validated(() => store.get(target.namespace, target.key), "namespace");
          if (existing && !storeAuthMatches(filter, existing.namespace, existing.key, existing.value)) {
            throw notFound("Item not found");
          }
          if (!storeAuthMatches(filter, target.namespace, target.key, target.value)) throw forbidden("Not authorized");
        }
        const options = body.ttl === undefined ? {} : { ttl: body.ttl };
        await validated(
          () => store.put(target.namespace, target.key, target.value, body.index ?? undefined, options),
          "namespace",
        );
      },
    }),
    defineRoute({
      method: "get",
      path: "/store/items",
      operationId: "get_item",
      tag,
      summary: "Get an item by dot-joined namespace and key (JSON null when absent)",
      query: StoreGetQuerySchema,
      response: StoreItemSchema.nullable(),
      handler: async ({ query, req }) => {
        const target = { namespace: query.namespace, key: query.key };
        const filter = await authorize(requestAuth(req), "store:get", target);
        const options = query.refresh_ttl === undefined ? {} : { refreshTtl: query.refresh_ttl };
        if (filter) {
          // Checked before the read that refreshes the TTL: someone else's item is left as it was.
          const item = await validated(
            () => store.get(target.namespace, target.key, { refreshTtl: false }),
            "namespace",
          );
          if (item && !storeAuthMatches(filter, item.namespace, item.key, item.value)) throw notFound("Item not found");
        }
        const item = await validated(() => store.get(target.namespace, target.key, options), "namespace");
        return item ? itemBody(item) : null;
      },
    }),
    defineRoute({
      method: "delete",
      path: "/store/items",
      operationId: "delete_item",
      tag,
      summary: "Delete an item",
      body: StoreDeleteSchema,
      response: null,
      status: 204,
      handler: async ({ body, req }) => {
        const target = { namespace: body.namespace ?? [], key: body.key };
        const filter = await authorize(requestAuth(req), "store:delete", target);
        if (filter) {
          const existing = await validated(() => store.get(target.namespace, target.key), "namespace");
          if (existing && !storeAuthMatches(filter, existing.namespace, existing.key, existing.value)) {
            throw notFound("Item not found");
          }
          if (!existing && !storeAuthMatches(filter, target.namespace, target.key)) throw forbidden("Not authorized");
        }
        await validated(() => store.delete(target.namespace, target.key), "namespace");
      },
    }),
    defineRoute({
      method: "post",
      path: "/store/items/search",
      operationId: "search_items",
      tag,
      summary:
        "Items under a namespace prefix, newest update first; with `query` and a store index, most similar first with a `score`",
      body: StoreSearchSchema,
      response: SearchItemsResponseSchema,
      handler: async ({ body, req }) => {
        const limit = body.limit ?? 10;
        const offset = body.offset ?? 0;
        const target = {
          namespace: body.namespace_prefix ?? [],
          filter: body.filter,
          limit,
          offset,
          query: body.query,
        };
        const filter = await authorize(requestAuth(req), "store:search", target);
        const read = (from: number, size: number) =>
          validated(
            () =>
              store.search(target.namespace, {
                filter: body.filter,
                limit: size,
                offset: from,
                query: body.query,
                ...(body.refresh_ttl !== undefined && { refreshTtl: body.refresh_ttl }),
              }),
            "namespace_prefix",
          );
        const items = filter
          ? await filteredPage(
              read,
              (item) => storeAuthMatches(filter, item.namespace, item.key, item.value),
              offset,
              limit,
            )
          : await read(offset, limit);
        return {
          items: items.map((item) => ({ ...itemBody(item), ...(item.score !== undefined && { score: item.score }) })),
        };
      },
    }),
    defineRoute({
      method: "post",
      path: "/store/namespaces",
      operationId: "list_namespaces",
      tag,
      summary: "Namespaces matching a prefix/suffix (`*` = any label), truncated to max_depth",
      body: StoreNamespacesSchema,
      response: ListNamespacesResponseSchema,
      handler: async ({ body, req }) => {
        const limit = body.limit ?? 100;
        const offset = body.offset ?? 0;
        const target = { namespace: body.prefix, suffix: body.suffix, max_depth: body.max_depth, limit, offset };
        const filter = await authorize(requestAuth(req), "store:list_namespaces", target);
        const read = (from: number, size: number) =>
          store.listNamespaces({
            prefix: target.namespace,
            suffix: body.suffix,
            maxDepth: body.max_depth,
            limit: size,
            offset: from,
          });
        const namespaces = filter
          ? await filteredPage(read, (namespace) => storeAuthMatches(filter, namespace), offset, limit)
          : await read(offset, limit);
        return { namespaces };
      },
    }),
  ];
}
