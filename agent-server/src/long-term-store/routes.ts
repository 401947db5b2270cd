import { type AnyRoute, defineRoute, HttpError, payloadTooLarge } from "@agentplane/common";
import { InvalidNamespaceError, type Item } from "@langchain/langgraph-checkpoint";
import type { ServerContext } from "../context.ts";
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

/** `/store/*`: the graphs' long-term memory (`config.store`) over HTTP, same items, same TTLs. */
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
      handler: async ({ body }) => {
        const size = Buffer.byteLength(JSON.stringify(body.value));
        if (size > settings.maxValueBytes) {
          throw payloadTooLarge(`Item value is ${size} bytes; the limit is ${settings.maxValueBytes} bytes`);
        }
        const options = body.ttl === undefined ? {} : { ttl: body.ttl };
        await validated(
          () => store.put(body.namespace, body.key, body.value, body.index ?? undefined, options),
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
      handler: async ({ query }) => {
        const options = query.refresh_ttl === undefined ? {} : { refreshTtl: query.refresh_ttl };
        const item = await validated(() => store.get(query.namespace, query.key, options), "namespace");
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
      handler: async ({ body }) => {
        await validated(() => store.delete(body.namespace ?? [], body.key), "namespace");
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
      handler: async ({ body }) => {
        const items = await validated(
          () =>
            store.search(body.namespace_prefix ?? [], {
              filter: body.filter,
              limit: body.limit ?? 10,
              offset: body.offset ?? 0,
              query: body.query,
              ...(body.refresh_ttl !== undefined && { refreshTtl: body.refresh_ttl }),
            }),
          "namespace_prefix",
        );
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
      handler: async ({ body }) => ({
        namespaces: await store.listNamespaces({
          prefix: body.prefix,
          suffix: body.suffix,
          maxDepth: body.max_depth,
          limit: body.limit ?? 100,
          offset: body.offset ?? 0,
        }),
      }),
    }),
  ];
}
