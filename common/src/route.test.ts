import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ApiKeyVerifier, hashApiKey } from "./api-keys.ts";
import { notFound } from "./errors.ts";
import { createJsonApp, errorHandler, listen, notFoundHandler, type RunningServer } from "./http.ts";
import { createLogger } from "./logger.ts";
import { buildOpenApi, createApiSchemaRegistry } from "./openapi.ts";
import { defineRoute, mountRoutes } from "./route.ts";

const apiSchemas = createApiSchemaRegistry();
const Widget = z.object({ name: z.string(), size: z.number().int().min(1) }).register(apiSchemas, { id: "Widget" });

const routes = [
  defineRoute({
    method: "post",
    path: "/widgets/:widget_id",
    operationId: "create_widget",
    tag: "Widgets",
    summary: "Create a widget",
    params: z.object({ widget_id: z.uuid() }),
    body: Widget,
    response: Widget,
    handler: ({ body }) => body,
  }),
  defineRoute({
    method: "get",
    path: "/missing",
    operationId: "missing",
    tag: "Widgets",
    summary: "Always 404",
    handler: () => {
      throw notFound("Widget not found");
    },
  }),
];

let server: RunningServer;
beforeAll(async () => {
  const app = createJsonApp({ bodyLimit: "1kb" });
  mountRoutes(app, routes);
  app.use(notFoundHandler);
  app.use(errorHandler(createLogger("test", "silent")));
  server = await listen(app, 0);
});
afterAll(() => server.close());

const id = "4b0f3c5e-1a2b-4c3d-8e9f-0a1b2c3d4e5f";
const post = (path: string, body: string, type = "application/json") =>
  fetch(`${server.url}${path}`, { method: "POST", body, headers: { "content-type": type } });

describe("routes", () => {
  it("validates path and body into FastAPI-style 422 details", async () => {
    const res = await post("/widgets/not-a-uuid", JSON.stringify({ size: 0 }));
    expect(res.status).toBe(422);
    const { detail } = (await res.json()) as any;
    expect(detail).toEqual(
      expect.arrayContaining([expect.objectContaining({ loc: ["path", "widget_id"], type: "uuid_parsing" })]),
    );
    const body = (await (await post(`/widgets/${id}`, JSON.stringify({ size: 0 }))).json()) as any;
    expect(body.detail).toEqual([
      { loc: ["body", "name"], msg: "Field required", type: "missing" },
      expect.objectContaining({ loc: ["body", "size"], type: "greater_than_equal" }),
    ]);
  });

  it("answers malformed JSON with 422, oversized bodies with 413 and unknown paths with 404, all JSON", async () => {
    const bad = await post(`/widgets/${id}`, "{not json");
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as any).detail[0].type).toBe("json_invalid");
    const big = await post(`/widgets/${id}`, JSON.stringify({ name: "x".repeat(2000), size: 1 }));
    expect(big.status).toBe(413);
    expect(await big.json()).toEqual({ detail: "Request body too large" });
    const missing = await fetch(`${server.url}/missing`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ detail: "Widget not found" });
    expect((await fetch(`${server.url}/nowhere`)).status).toBe(404);
  });

  it("refuses JSON sent as text/plain (a cross-site form needs no preflight for it) with 415", async () => {
    const res = await post(`/widgets/${id}`, JSON.stringify({ name: "a", size: 2 }), "text/plain");
    expect(res.status).toBe(415);
    expect(await res.json()).toEqual({ detail: "Request body must be JSON (Content-Type: application/json)" });
  });

  it("validates an empty body of no type as {} (422 for what is missing), not 415", async () => {
    const res = await fetch(`${server.url}/widgets/${id}`, { method: "POST" });
    expect(res.status).toBe(422);
    expect(((await res.json()) as any).detail.map((issue: any) => issue.loc)).toContainEqual(["body", "name"]);
  });

  it("accepts JSON under a +json type and returns the handler's value", async () => {
    const res = await post(`/widgets/${id}`, JSON.stringify({ name: "a", size: 2 }), "application/merge-patch+json");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ name: "a", size: 2 });
    // No ETag: hashing every body cost large answers a sixth of their time, and no client asks for one.
    expect(res.headers.get("etag")).toBeNull();
  });
});

describe("openapi", () => {
  it("documents the routes from the same schemas, with named components", () => {
    const doc = buildOpenApi({ title: "t", version: "1" }, routes, apiSchemas) as any;
    const op = doc.paths["/widgets/{widget_id}"].post;
    expect(op.operationId).toBe("create_widget");
    expect(op.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Widget" });
    expect(op.parameters[0]).toMatchObject({ name: "widget_id", in: "path", required: true });
    expect(doc.components.schemas.Widget.required).toEqual(["name", "size"]);
    expect(op.responses["422"]).toBeDefined();
  });

  it("documents request components as clients may send them: defaulted fields optional, extra keys allowed", () => {
    const Query = z
      .object({ text: z.string(), limit: z.number().int().default(10) })
      .register(apiSchemas, { id: "WidgetQuery" });
    const search = defineRoute({
      method: "post",
      path: "/widgets/search",
      operationId: "search_widgets",
      tag: "Widgets",
      summary: "Search widgets",
      body: Query,
      response: z.array(Widget),
      handler: () => [],
    });
    const component = (buildOpenApi({ title: "t", version: "1" }, [search], apiSchemas) as any).components.schemas
      .WidgetQuery;
    expect(component.required).toEqual(["text"]);
    expect(component.properties.limit).toMatchObject({ type: "integer", default: 10 });
    expect(component).not.toHaveProperty("additionalProperties");
    expect(Query.parse({ text: "a", extra: true })).toEqual({ text: "a", limit: 10 });
  });

  it("gives components no $id or $schema, so $refs inside them resolve against the document", () => {
    const Order = z.object({ widget: Widget, count: z.number() }).register(apiSchemas, { id: "WidgetOrder" });
    const route = defineRoute({
      method: "post",
      path: "/orders",
      operationId: "order",
      tag: "Widgets",
      summary: "Order a widget",
      body: Order,
      handler: () => ({}),
    });
    const { schemas } = (buildOpenApi({ title: "t", version: "1" }, [route], apiSchemas) as any).components;
    for (const component of Object.values(schemas)) {
      expect(component).not.toHaveProperty("$id");
      expect(component).not.toHaveProperty("$schema");
    }
    expect(schemas.WidgetOrder.properties.widget).toEqual({ $ref: "#/components/schemas/Widget" });
  });

  it("offers {} as the example of a body that requires nothing, and no example otherwise", () => {
    const filter = defineRoute({
      method: "post",
      path: "/widgets/count",
      operationId: "count_widgets",
      tag: "Widgets",
      summary: "Count widgets",
      body: z.object({ name: z.string().optional(), limit: z.number().default(10) }),
      handler: () => 0,
    });
    const doc = buildOpenApi({ title: "t", version: "1" }, [...routes, filter], apiSchemas) as any;
    expect(doc.paths["/widgets/count"].post.requestBody.content["application/json"].example).toEqual({});
    expect(doc.paths["/widgets/{widget_id}"].post.requestBody.content["application/json"]).not.toHaveProperty(
      "example",
    );
  });

  it("lists only the components of its own registry", () => {
    const gadgets = createApiSchemaRegistry();
    const Gadget = z.object({ widget: Widget }).register(gadgets, { id: "Gadget" });
    const route = defineRoute({
      method: "get",
      path: "/gadget",
      operationId: "gadget",
      tag: "Gadgets",
      summary: "A gadget",
      response: Gadget,
      handler: () => ({ widget: { name: "a", size: 1 } }),
    });
    const gadgetDoc = buildOpenApi({ title: "g", version: "1" }, [route], gadgets) as any;
    expect(Object.keys(gadgetDoc.components.schemas)).toEqual(["Gadget"]);
    // A schema another registry names is inlined, not referenced to a component this document lacks.
    expect(gadgetDoc.components.schemas.Gadget.properties.widget.required).toEqual(["name", "size"]);
    const widgetDoc = buildOpenApi({ title: "w", version: "1" }, routes, apiSchemas) as any;
    expect(widgetDoc.components.schemas).not.toHaveProperty("Gadget");
  });
});

describe("api keys", () => {
  it("verifies keys against stored SHA-256 hashes only", () => {
    const verifier = new ApiKeyVerifier([[hashApiKey("secret-1"), "org-a"] as [string, string]]);
    expect(verifier.verify("secret-1")).toBe("org-a");
    expect(verifier.verify("secret-2")).toBeUndefined();
    expect(verifier.verify(undefined)).toBeUndefined();
    expect(() => new ApiKeyVerifier([["plain-text", true]])).toThrow(/SHA-256/);
  });
});
