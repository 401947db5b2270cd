import { type AnyRoute, defineRoute } from "@agentplane/common";
import { z } from "zod";
import type { AssistantService } from "../assistants/service.ts";
import { requestAuth } from "../custom-auth/module.ts";
import { QueryBoolean } from "../http/query.ts";
import { apiSchemas } from "../schemas/registry.ts";
import type { GraphRegistry } from "./types.ts";

const TAG = "Assistants";

const AssistantParams = z.object({ assistant_id: z.string().min(1) });

/** `xray` is a boolean or a maximum subgraph depth. */
const XrayQuery = z.object({
  xray: z
    .union([z.enum(["true", "false"]), z.coerce.number().int().min(0)])
    .transform((value) => (value === "true" ? true : value === "false" ? false : value))
    .optional(),
});

const NullableJson = z.record(z.string(), z.unknown()).nullable();

export const GraphSchemasSchema = z
  .object({
    graph_id: z.string(),
    input_schema: NullableJson,
    output_schema: NullableJson,
    state_schema: NullableJson,
    config_schema: NullableJson,
    context_schema: NullableJson,
  })
  .register(apiSchemas, {
    id: "GraphSchema",
    description: "JSON Schemas of a graph's input, output, state and context.",
  });

const DrawableGraph = z
  .object({
    nodes: z.array(z.object({ id: z.union([z.string(), z.number()]), type: z.string(), data: z.unknown() })),
    edges: z.array(
      z.object({
        source: z.string(),
        target: z.string(),
        conditional: z.boolean().optional(),
        data: z.unknown().optional(),
      }),
    ),
  })
  .register(apiSchemas, { id: "DrawableGraph" });

/** Drawing, schemas and subgraphs of the graph behind an assistant. */
export function graphRoutes(assistants: AssistantService, graphs: GraphRegistry): AnyRoute[] {
  return [
    defineRoute({
      method: "get",
      path: "/assistants/:assistant_id/graph",
      operationId: "get_assistant_graph",
      tag: TAG,
      summary: "Get the drawable graph of an assistant",
      params: AssistantParams,
      query: XrayQuery,
      response: DrawableGraph,
      errors: [404],
      handler: async ({ params, query, req }) => {
        const { graph } = await assistants.graph(params.assistant_id, requestAuth(req));
        const drawable = await graph.getGraphAsync({ xray: query.xray ?? false });
        return drawable.toJSON();
      },
    }),
    defineRoute({
      method: "get",
      path: "/assistants/:assistant_id/schemas",
      operationId: "get_assistant_schemas",
      tag: TAG,
      summary: "Get the JSON Schemas of an assistant's graph",
      params: AssistantParams,
      response: GraphSchemasSchema,
      errors: [404],
      handler: async ({ params, req }) => {
        const { assistant, graph } = await assistants.graph(params.assistant_id, requestAuth(req));
        return graphs.schemas(assistant.graph_id, graph);
      },
    }),
    defineRoute({
      method: "get",
      path: "/assistants/:assistant_id/subgraphs",
      operationId: "get_assistant_subgraphs",
      tag: TAG,
      summary: "Get the schemas of an assistant's subgraphs",
      params: AssistantParams,
      query: z.object({ recurse: QueryBoolean.optional() }),
      response: z.record(z.string(), GraphSchemasSchema),
      errors: [404],
      handler: async ({ params, query, req }) => {
        const { assistant, graph } = await assistants.graph(params.assistant_id, requestAuth(req));
        return graphs.subgraphSchemas(assistant.graph_id, graph, undefined, query.recurse ?? false);
      },
    }),
    defineRoute({
      method: "get",
      path: "/assistants/:assistant_id/subgraphs/:namespace",
      operationId: "get_assistant_subgraphs_by_namespace",
      tag: TAG,
      summary: "Get the schemas of the subgraphs under a namespace",
      params: AssistantParams.extend({ namespace: z.string().min(1) }),
      query: z.object({ recurse: QueryBoolean.optional() }),
      response: z.record(z.string(), GraphSchemasSchema),
      errors: [404],
      handler: async ({ params, query, req }) => {
        const { assistant, graph } = await assistants.graph(params.assistant_id, requestAuth(req));
        return graphs.subgraphSchemas(assistant.graph_id, graph, params.namespace, query.recurse ?? false);
      },
    }),
  ];
}
