import { z } from "zod";
import type { AnyRoute } from "./route.ts";

export type ApiSchemaRegistry = z.core.$ZodRegistry<{ id: string; description?: string }>;

/**
 * A registry of named schemas (`components.schemas`) for one service's OpenAPI document. Each
 * service keeps its own, so that when two services run in one process (tests, a combined dev
 * server) neither document lists the other's components. Register a schema once with
 * `schema.register(registry, {id: "Thread"})`; every route that uses it then refers to it.
 */
export function createApiSchemaRegistry(): ApiSchemaRegistry {
  return z.registry<{ id: string; description?: string }>();
}

export interface SecurityScheme {
  name: string;
  scheme: Record<string, unknown>;
}

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
  securitySchemes?: SecurityScheme[];
}

const componentRef = (id: string) => `#/components/schemas/${id}`;

function jsonSchema(schema: z.ZodType, io: "input" | "output", registry: ApiSchemaRegistry): Record<string, unknown> {
  const id = registry.get(schema)?.id;
  if (id) return { $ref: componentRef(id) };
  const generated = z.toJSONSchema(schema, { metadata: registry, io, unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
  // Named sub-schemas live once in components.schemas rather than in per-operation $defs.
  delete generated.$defs;
  delete generated.$schema;
  return JSON.parse(JSON.stringify(generated).replaceAll('"#/$defs/', '"#/components/schemas/'));
}

/** `/threads/:thread_id` → `/threads/{thread_id}` */
const openApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");

function parameters(route: AnyRoute, registry: ApiSchemaRegistry): Record<string, unknown>[] {
  const result: Record<string, unknown>[] = [];
  for (const [location, schema] of [
    ["path", route.params],
    ["query", route.query],
  ] as const) {
    if (!schema) continue;
    const object = jsonSchema(schema, "input", registry);
    const properties = (object.properties ?? {}) as Record<string, unknown>;
    const required = new Set((object.required as string[] | undefined) ?? []);
    for (const [name, property] of Object.entries(properties)) {
      result.push({ name, in: location, required: location === "path" || required.has(name), schema: property });
    }
  }
  return result;
}

const errorBody = {
  type: "object",
  properties: { detail: { type: "string" } },
  required: ["detail"],
};
const validationErrorBody = {
  type: "object",
  properties: {
    detail: {
      type: "array",
      items: {
        type: "object",
        properties: {
          loc: { type: "array", items: { anyOf: [{ type: "string" }, { type: "integer" }] } },
          msg: { type: "string" },
          type: { type: "string" },
        },
        required: ["loc", "msg", "type"],
      },
    },
  },
};

/**
 * A body whose fields are all optional: each field then means something (`supersteps` replays
 * updates, a search filter narrows), so "Try it out" starts from `{}` rather than Swagger UI's
 * sample of every field, which such a request would refuse or find nothing with.
 */
function requiresNothing(body: z.ZodType): boolean {
  const schema = z.toJSONSchema(body, { io: "input", unrepresentable: "any" }) as {
    type?: string;
    required?: string[];
  };
  return schema.type === "object" && (schema.required ?? []).length === 0;
}

function operation(
  route: AnyRoute,
  security: Record<string, string[]>[],
  registry: ApiSchemaRegistry,
): Record<string, unknown> {
  const status = String(route.status ?? 200);
  const responses: Record<string, unknown> = {
    [status]:
      route.response === null || status === "204"
        ? { description: "Success" }
        : {
            description: "Success",
            content: {
              "application/json": { schema: route.response ? jsonSchema(route.response, "output", registry) : {} },
            },
          },
  };
  for (const code of route.alsoStatus ?? []) responses[String(code)] = responses[status];
  for (const code of route.errors ?? []) {
    responses[String(code)] = { description: "Error", content: { "application/json": { schema: errorBody } } };
  }
  if (route.params || route.query || route.body) {
    responses["422"] = {
      description: "Validation Error",
      content: { "application/json": { schema: validationErrorBody } },
    };
  }
  const op: Record<string, unknown> = {
    operationId: route.operationId,
    summary: route.summary,
    tags: [route.tag],
    parameters: parameters(route, registry),
    responses,
  };
  if (route.body) {
    const schema = jsonSchema(route.body, "input", registry);
    op.requestBody = {
      required: true,
      content: { "application/json": { schema, ...(requiresNothing(route.body) ? { example: {} } : {}) } },
    };
  }
  if (!route.public && security.length > 0) op.security = security;
  return op;
}

/**
 * Builds an OpenAPI 3.1 document from the same routes (and zod schemas) that serve requests;
 * `components.schemas` holds exactly the schemas registered in `registry`.
 */
export function buildOpenApi(
  info: OpenApiInfo,
  routes: AnyRoute[],
  registry: ApiSchemaRegistry,
): Record<string, unknown> {
  const security = (info.securitySchemes ?? []).map((s) => ({ [s.name]: [] }));
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = openApiPath(route.path);
    paths[path] ??= {};
    paths[path][route.method] = operation(route, security, registry);
  }
  // Components as a client may send them: a field with a default is optional and unknown keys are
  // stripped, not refused. Output mode would list defaulted request fields as required and forbid
  // extra keys; the two renderings differ only for request schemas, whose defaults are the point.
  const generated = z.toJSONSchema(registry, { uri: componentRef, io: "input", unrepresentable: "any" });
  // zod gives each component `$id: "#/components/schemas/X"` and a `$schema`. OpenAPI needs neither, and
  // Swagger UI resolves the `$ref`s inside a component against that `$id`, finds nothing and sends
  // `"string"` as every request body. Plain components make every `$ref` document-relative.
  const schemas = Object.fromEntries(
    Object.entries(generated.schemas).map(([id, { $id: _id, $schema: _schema, ...schema }]) => [id, schema]),
  );
  return {
    openapi: "3.1.0",
    info: { title: info.title, version: info.version, description: info.description },
    paths,
    components: {
      schemas,
      securitySchemes: Object.fromEntries((info.securitySchemes ?? []).map((s) => [s.name, s.scheme])),
    },
  };
}
