import { createLogger } from "@agentplane/common";
import { beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../config.ts";
import type { ServerContext } from "../context.ts";
import { fixtureConfig } from "../graphs/testing/server.ts";
import { createMemoryStorage } from "../storage/memory.ts";
import { echoGraphRegistry } from "../storage/testing/api-server.ts";
import { ThreadService } from "../threads/service.ts";
import { defaultAssistantId } from "./resolve.ts";
import { AssistantService } from "./service.ts";

/** The rules the assistant service owns, on in-memory storage with the echo graph (`agent`). */
describe("AssistantService", () => {
  let threads: ThreadService;
  let assistants: AssistantService;

  beforeEach(() => {
    const storage = createMemoryStorage();
    const ctx: ServerContext = {
      config: loadConfig(["dev", "--config", fixtureConfig], {}),
      storage,
      graphs: echoGraphRegistry(storage),
      logger: createLogger("assistant-service", "silent"),
    };
    threads = new ThreadService(ctx);
    assistants = new AssistantService(ctx, () => threads);
  });

  it("creates only for known graphs, answers 409 for a taken id unless if_exists do_nothing", async () => {
    await expect(assistants.create({ graph_id: "nope" })).rejects.toMatchObject({
      status: 404,
      detail: 'Graph "nope" not found',
    });
    const created = await assistants.create({ graph_id: "agent", name: "first" });
    await expect(assistants.create({ assistant_id: created.assistant_id, graph_id: "agent" })).rejects.toMatchObject({
      status: 409,
    });
    const again = await assistants.create({
      assistant_id: created.assistant_id,
      graph_id: "agent",
      name: "second",
      if_exists: "do_nothing",
    });
    expect(again).toEqual(created);
  });

  it("looks assistants up by id or graph id: 422 for neither, 404 for no such assistant, graph ids always found", async () => {
    await expect(assistants.get("not-a-uuid")).rejects.toMatchObject({ status: 422 });
    await expect(assistants.get(crypto.randomUUID())).rejects.toMatchObject({
      status: 404,
      detail: "Assistant not found",
    });
    // A graph's default assistant that is missing from storage is created again on lookup.
    const system = await assistants.get("agent");
    expect(system).toMatchObject({
      assistant_id: defaultAssistantId("agent"),
      graph_id: "agent",
      metadata: { created_by: "system" },
    });
    expect(await assistants.find("agent")).toEqual(system);
    expect(await assistants.find("not-a-uuid")).toBeUndefined();
  });

  it("writes a new version on each patch and makes an earlier one current again", async () => {
    const created = await assistants.create({ graph_id: "agent", config: { configurable: { model: "a" } } });
    await expect(assistants.patch(created.assistant_id, { graph_id: "nope" })).rejects.toMatchObject({ status: 404 });
    const patched = await assistants.patch(created.assistant_id, { config: { configurable: { model: "b" } } });
    expect(patched.version).toBe(2);
    const versions = await assistants.versions(created.assistant_id, { limit: 10, offset: 0 });
    expect(versions.map((version) => version.version)).toEqual([2, 1]);
    const restored = await assistants.setLatest(created.assistant_id, 1);
    expect(restored).toMatchObject({ version: 1, config: { configurable: { model: "a" } } });
    await expect(assistants.setLatest(created.assistant_id, 9)).rejects.toMatchObject({
      status: 404,
      detail: "Assistant version not found",
    });
    await expect(assistants.patch(crypto.randomUUID(), { name: "x" })).rejects.toMatchObject({ status: 404 });
  });

  it("deletes an assistant, with delete_threads the threads its runs used too", async () => {
    const kept = await assistants.create({ graph_id: "agent" });
    const purged = await assistants.create({ graph_id: "agent" });
    const keptThread = await threads.create({ metadata: { assistant_id: kept.assistant_id } });
    const purgedThread = await threads.create({ metadata: { assistant_id: purged.assistant_id } });

    expect(await assistants.delete(kept.assistant_id, { deleteThreads: false })).toBe(kept.assistant_id);
    expect(await threads.find(keptThread.thread_id)).toBeDefined();
    expect(await assistants.delete(purged.assistant_id, { deleteThreads: true })).toBe(purged.assistant_id);
    expect(await threads.find(purgedThread.thread_id)).toBeUndefined();
    await expect(assistants.delete(purged.assistant_id, { deleteThreads: false })).rejects.toMatchObject({
      status: 404,
    });
  });

  it("builds the graph behind an assistant", async () => {
    const created = await assistants.create({ graph_id: "agent" });
    const { assistant, graph } = await assistants.graph(created.assistant_id);
    expect(assistant).toEqual(created);
    expect(await graph.invoke({ topic: "tea" }, { configurable: { thread_id: crypto.randomUUID() } })).toEqual({
      topic: "tea",
      reply: "about tea",
    });
  });
});
