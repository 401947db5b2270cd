import { z } from "zod";
import { QueryBoolean } from "../http/query.ts";
import { JsonObjectSchema, optional, TtlMinutesSchema } from "../schemas/common.ts";
import { apiSchemas } from "../schemas/registry.ts";
import { FieldPathSchema } from "./semantic.ts";

/** Request and response shapes of `/store/*`: one zod schema per shape (validation, types, OpenAPI). */

const LABEL_MESSAGE = "Namespace labels cannot be empty or contain periods, colons or NUL bytes";

/**
 * One namespace label: what the Redis layout can key on and the GET query can dot-join, and what
 * the checkpoint library's `validateNamespace` accepts (it throws on NUL, which would be a 500).
 */
const LabelSchema = z.string().refine((label) => label.length > 0 && !/[.:\0]/.test(label), LABEL_MESSAGE);

export const NamespaceSchema = z.array(LabelSchema);

/** `GET /store/items` takes the namespace dot-joined (`a.b`), as both SDKs send it. */
const DottedNamespaceSchema = z
  .string()
  .optional()
  .transform((dotted) => (dotted ? dotted.split(".") : []))
  .pipe(NamespaceSchema);

/** Minutes; `null` = never expires; absent = the store default. */
const TtlSchema = TtlMinutesSchema.nullable().optional();

export const StorePutSchema = z
  .object({
    namespace: NamespaceSchema.min(1, "Namespace is required"),
    key: z.string().min(1),
    value: JsonObjectSchema,
    index: z.union([z.literal(false), z.array(FieldPathSchema), z.null()]).optional(),
    ttl: TtlSchema,
  })
  .register(apiSchemas, { id: "StorePutRequest" });

export const StoreGetQuerySchema = z.object({
  key: z.string().min(1),
  namespace: DottedNamespaceSchema,
  refresh_ttl: QueryBoolean.optional(),
});

export const StoreDeleteSchema = z
  .object({ namespace: optional(NamespaceSchema), key: z.string().min(1) })
  .register(apiSchemas, { id: "StoreDeleteRequest" });

export const StoreSearchSchema = z
  .object({
    namespace_prefix: optional(NamespaceSchema),
    filter: optional(JsonObjectSchema),
    limit: optional(z.number().int().min(1).max(1000)),
    offset: optional(z.number().int().min(0)),
    query: optional(z.string()),
    refresh_ttl: optional(z.boolean()),
  })
  .register(apiSchemas, { id: "StoreSearchRequest" });

/** In prefix/suffix a `*` label matches any one label. */
const PatternSchema = NamespaceSchema;

export const StoreNamespacesSchema = z
  .object({
    prefix: optional(PatternSchema),
    suffix: optional(PatternSchema),
    max_depth: optional(z.number().int().min(1)),
    limit: optional(z.number().int().min(1).max(1000)),
    offset: optional(z.number().int().min(0)),
  })
  .register(apiSchemas, { id: "StoreListNamespacesRequest" });

export const StoreItemSchema = z
  .object({
    namespace: z.array(z.string()),
    key: z.string(),
    value: JsonObjectSchema,
    created_at: z.string(),
    updated_at: z.string(),
  })
  .register(apiSchemas, { id: "Item" });

export const SearchItemSchema = StoreItemSchema.extend({
  score: z.number().optional().describe("Similarity to `query` (cosine), for items the store's index embedded"),
}).register(apiSchemas, { id: "SearchItem" });

export const SearchItemsResponseSchema = z
  .object({ items: z.array(SearchItemSchema) })
  .register(apiSchemas, { id: "SearchItemsResponse" });

export const ListNamespacesResponseSchema = z
  .object({ namespaces: z.array(z.array(z.string())) })
  .register(apiSchemas, { id: "ListNamespaceResponse" });
