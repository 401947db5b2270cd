import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "@agentplane/common";
import { InMemoryStore, MemorySaver } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { GraphLoadError, type Persistence } from "./load.ts";
import { ProjectError } from "./project.ts";
import { ProjectGraphRegistry } from "./registry.ts";

const fixtures = join(import.meta.dirname, "testing", "project");
const fixtureModule = join(fixtures, "graphs.ts");

function writeProject(content: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), "agentplane-graphs-"));
  const path = join(dir, "langgraph.json");
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

const silent = createLogger("registry-test", "silent");
const load = (configPath: string, persistence: Persistence) =>
  ProjectGraphRegistry.load(configPath, persistence, silent);
const persistence = () => ({ checkpointer: new MemorySaver(), store: new InMemoryStore() });

describe("ProjectGraphRegistry", () => {
  it("loads every export shape and attaches the server's checkpointer and store", async () => {
    const server = persistence();
    const registry = await load(join(fixtures, "langgraph.json"), server);
    expect(registry.ids().sort()).toEqual(
      ["compiled", "default_export", "factory", "hitl", "messages", "parent", "promised", "uncompiled"].sort(),
    );
    expect(registry.description("uncompiled")).toBe("builder compiled by the server");
    for (const id of registry.ids()) {
      const graph = await registry.get(id);
      expect(graph.checkpointer).toBe(server.checkpointer);
      expect(graph.store).toBe(server.store);
    }
    const result = await (await registry.get("uncompiled")).invoke({}, { configurable: { thread_id: "t1" } });
    expect(result).toEqual({ count: 1 });
    expect((await server.checkpointer.getTuple({ configurable: { thread_id: "t1" } }))?.checkpoint).toBeDefined();
  });

  it("calls factories with the request config", async () => {
    const registry = await load(join(fixtures, "langgraph.json"), persistence());
    const graph = await registry.get("factory", { configurable: { step: 5 } });
    expect(await graph.invoke({}, { configurable: { thread_id: "f1" } })).toEqual({ count: 5 });
  });

  it("applies the env file before loading graphs without overriding the process environment", async () => {
    process.env.FIXTURE_FILE_VAR = undefined;
    delete process.env.FIXTURE_FILE_VAR;
    await load(join(fixtures, "langgraph.json"), persistence());
    expect(process.env.FIXTURE_FILE_VAR).toBe("from-file");
    process.env.FIXTURE_OBJECT_VAR = "from-process";
    const path = writeProject({
      graphs: { g: `${fixtureModule}:compiled` },
      env: { FIXTURE_OBJECT_VAR: "from-config", FIXTURE_NUMBER: 3 },
    });
    await load(path, persistence());
    expect(process.env.FIXTURE_OBJECT_VAR).toBe("from-process");
    expect(process.env.FIXTURE_NUMBER).toBe("3");
  });

  it("derives schemas from a zod state with the project's own LangGraph", async () => {
    const registry = await load(join(fixtures, "langgraph.json"), persistence());
    const parent = await registry.schemas("parent");
    expect(parent.state_schema).toMatchObject({ type: "object", properties: { topic: { type: "string" } } });
    expect(parent.context_schema).toMatchObject({ properties: { model: { type: "string" } } });
    // Annotation states are read from the types in a worker: schemas-static.integration.test.ts.
  });

  it("answers schemas without waiting on the types with the runtime's description", async () => {
    const registry = await load(join(fixtures, "langgraph.json"), persistence());
    const parent = await registry.schemasWithoutWaiting("parent");
    expect(parent.state_schema).toMatchObject({ type: "object", properties: { topic: { type: "string" } } });
    // An Annotation state before its types are read: the channel list.
    const messages = await registry.schemasWithoutWaiting("messages");
    expect(messages.input_schema).toEqual({
      type: "object",
      title: "State",
      properties: { messages: { langgraph_type: "messages" } },
    });
  });

  it("reports broken projects in one line", async () => {
    const loadContent = (content: unknown) => load(writeProject(content), persistence());
    await expect(load("/nonexistent/langgraph.json", persistence())).rejects.toThrow(ProjectError);
    await expect(loadContent("{not json")).rejects.toThrow(/cannot read .*langgraph.json/);
    await expect(loadContent({ graphs: {} })).rejects.toThrow(/graphs must name at least one graph/);
    await expect(loadContent({ graphs: { g: `${fixtureModule}:missing` } })).rejects.toThrow(/has no export "missing"/);
    await expect(loadContent({ graphs: { g: `${fixtureModule}:notAGraph` } })).rejects.toThrow(GraphLoadError);
    await expect(loadContent({ graphs: { g: "./nowhere.ts:graph" } })).rejects.toThrow(/cannot load graph "g"/);
    await expect(loadContent({ graphs: { g: `${fixtureModule}:compiled` }, env: "./missing.env" })).rejects.toThrow(
      /cannot read env file/,
    );
  });

  it("reloads modules, keeping the old graphs when the new set fails to load", async () => {
    const path = writeProject({ graphs: { g: `${fixtureModule}:compiled` } });
    const registry = await load(path, persistence());
    writeFileSync(path, JSON.stringify({ graphs: { g: `${fixtureModule}:compiled`, h: `${fixtureModule}:messages` } }));
    await registry.reload();
    expect(registry.ids()).toEqual(["g", "h"]);
    writeFileSync(path, JSON.stringify({ graphs: { g: `${fixtureModule}:missing` } }));
    await expect(registry.reload()).rejects.toThrow(GraphLoadError);
    expect(registry.ids()).toEqual(["g", "h"]);
  });
});
