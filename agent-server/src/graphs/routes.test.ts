import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentServer } from "../server.ts";
import { exampleConfig, fixtureConfig, startTestServer } from "./testing/server.ts";

let server: AgentServer;
let client: Client;

beforeAll(async () => {
  server = await startTestServer(fixtureConfig);
  client = new Client({ apiUrl: server.url });
});
afterAll(() => server?.close());

describe("default assistants", () => {
  it("registers one system assistant per graph with the uuid5 id, once", async () => {
    const example = await startTestServer(exampleConfig);
    try {
      const sdk = new Client({ apiUrl: example.url });
      const assistant = await sdk.assistants.get("fe096781-5601-53d2-b2f6-0d3403f7e9ca");
      expect(assistant).toMatchObject({ graph_id: "agent", name: "agent", metadata: { created_by: "system" } });
      await example.graphs.reload();
      const { registerDefaultAssistants } = await import("./default-assistants.ts");
      await registerDefaultAssistants(example.ctx);
      expect(await sdk.assistants.search({ graphId: "agent" })).toHaveLength(1);
    } finally {
      await example.close();
    }
  });
});

describe("graph endpoints", () => {
  it("draws the graph, by graph id or assistant id, with xray as bool or depth", async () => {
    const drawing = await client.assistants.getGraph("parent");
    expect(drawing.nodes.map((node) => node.id)).toEqual(["__start__", "child", "__end__"]);
    expect(drawing.edges).toContainEqual(expect.objectContaining({ source: "__start__", target: "child" }));
    const assistant = await client.assistants.create({ graphId: "parent" });
    const xray = await client.assistants.getGraph(assistant.assistant_id, { xray: true });
    expect(xray.nodes.map((node) => node.id)).toContain("child:research");
    const depth = await fetch(`${server.url}/assistants/parent/graph?xray=1`);
    expect(((await depth.json()) as any).nodes.map((node: any) => node.id)).toContain("child:research");
  });

  it("returns the graph's JSON Schemas", async () => {
    const schemas = await client.assistants.getSchemas("parent");
    expect(schemas.graph_id).toBe("parent");
    expect(schemas.input_schema).toMatchObject({ type: "object", properties: { topic: { type: "string" } } });
    expect(schemas.context_schema).toMatchObject({ properties: { model: { type: "string" } } });
  });

  it("lists subgraphs, optionally under a namespace", async () => {
    const subgraphs = await client.assistants.getSubgraphs("parent");
    expect(Object.keys(subgraphs)).toEqual(["child"]);
    expect((subgraphs.child as any).state_schema.properties.topic).toMatchObject({ type: "string" });
    expect(Object.keys(await client.assistants.getSubgraphs("parent", { namespace: "child", recurse: true }))).toEqual([
      "child",
    ]);
    expect(await client.assistants.getSubgraphs("messages")).toEqual({});
  });

  it("answers 404 for unknown assistants and 422 for ids that are neither uuid nor graph", async () => {
    const unknown = await fetch(`${server.url}/assistants/00000000-0000-4000-8000-000000000000/schemas`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ detail: "Assistant not found" });
    expect((await fetch(`${server.url}/assistants/no-such-graph/graph`)).status).toBe(422);
    expect((await fetch(`${server.url}/assistants/parent/graph?xray=maybe`)).status).toBe(422);
  });
});
