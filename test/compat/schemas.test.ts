import { expect, it } from "vitest";
import { sdkSuites, useCompatServers } from "./harness.ts";

/**
 * `GET /assistants/{id}/schemas` and the subgraphs' schemas, on a zod state (its messages channel
 * registered with LangGraph's metadata) and on `Annotation` states with a configuration schema,
 * whose JSON Schemas only the TypeScript types hold. Both servers read them the same way: zod
 * through the project's own `@langchain/langgraph`, types with the TypeScript compiler.
 */
const project = new URL("./projects/schemas/langgraph.json", import.meta.url).pathname;
// Reading a project's types takes the TypeScript compiler seconds on each server (once per
// graph); both share two cores here, so both get longer than their default 30 s.
const TYPES_TIMEOUT_MS = 120_000;
const servers = useCompatServers(project, { LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS: String(TYPES_TIMEOUT_MS) });

/**
 * Subgraph schemas in the reference's shape. Ours answers `{graph_id, input_schema, …}` per
 * subgraph, as the SDK types it (docs/compatibility.md); the schemas inside must be the same.
 */
function subgraphSchemas(answer: object) {
  return Object.fromEntries(
    Object.entries(answer as Record<string, Record<string, unknown>>).map(([namespace, schema]) => [
      namespace,
      "state_schema" in schema
        ? {
            state: schema.state_schema,
            input: schema.input_schema,
            output: schema.output_schema,
            config: schema.config_schema,
          }
        : schema,
    ]),
  );
}

sdkSuites((sdk) => {
  it("zod state: the schemas carry LangGraph's metadata (messages) and the context schema", async () => {
    const { ours } = await servers.compare(sdk, async ({ client }) => ({
      schemas: await client.assistants.getSchemas("zod_state"),
      subgraphs: subgraphSchemas(await client.assistants.getSubgraphs("zod_state", { recurse: true })),
    }));
    expect(ours).toMatchObject({
      schemas: {
        state_schema: { properties: { messages: { langgraph_type: "messages" }, query: { type: "string" } } },
        context_schema: { properties: { model: { enum: ["small", "large"] } } },
      },
      subgraphs: { research: { state: { properties: { messages: { langgraph_type: "messages" } } } } },
    });
  });

  it(
    "Annotation state: typed schemas from the TypeScript types, also for config and the subgraph",
    async () => {
      const { ours } = await servers.compare(sdk, async ({ client }) => ({
        schemas: await client.assistants.getSchemas("annotation_state"),
        subgraphs: subgraphSchemas(await client.assistants.getSubgraphs("annotation_state", { recurse: true })),
      }));
      expect(ours).toMatchObject({
        schemas: {
          state_schema: { properties: { answer: { type: "string" }, attempts: { type: "number" } } },
          config_schema: { properties: { model: { enum: ["large", "small"] } } },
        },
        subgraphs: { planner: { state: { properties: { steps: { type: "array" } } } } },
      });
    },
    TYPES_TIMEOUT_MS,
  );
});
