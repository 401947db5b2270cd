import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer, storageBackends } from "../storage/testing/api-server.ts";
import { defaultAssistantId } from "./resolve.ts";

const backends = storageBackends("assistants-http");

describe.each(backends)("assistant routes on %s storage", (_kind, makeStorage) => {
  let api: ApiServer;
  let client: Client;
  beforeAll(async () => {
    api = await startApiServer(await makeStorage());
    client = new Client({ apiUrl: api.url, callerOptions: { maxRetries: 0 } });
  });
  afterAll(() => api.close());

  const call = (method: string, path: string, body?: unknown) => api.call(method, path, body);

  it("creates, reads, patches into versions, restores a version and deletes", async () => {
    const created = await client.assistants.create({
      graphId: "agent",
      name: "helper",
      config: { configurable: { model: "a" } },
      metadata: { team: "x" },
    });
    expect(created).toMatchObject({ graph_id: "agent", name: "helper", version: 1, metadata: { team: "x" } });
    expect(await client.assistants.get(created.assistant_id)).toEqual(created);

    const updated = await client.assistants.update(created.assistant_id, {
      config: { configurable: { model: "b" } },
      metadata: { env: "prod" },
    });
    expect(updated).toMatchObject({
      version: 2,
      config: { configurable: { model: "b" } },
      metadata: { team: "x", env: "prod" },
    });
    const versions = await client.assistants.getVersions(created.assistant_id);
    expect(versions.map((v) => v.version)).toEqual([2, 1]);

    const restored = await client.assistants.setLatest(created.assistant_id, 1);
    expect(restored).toMatchObject({ version: 1, config: { configurable: { model: "a" } } });
    expect((await client.assistants.update(created.assistant_id, {})).version).toBe(3);
    const viaQuery = await call("POST", `/assistants/${created.assistant_id}/latest?version=2`);
    expect(viaQuery.body).toMatchObject({ version: 2, metadata: { env: "prod" } });

    expect(await client.assistants.delete(created.assistant_id)).toEqual([created.assistant_id]);
    await expect(client.assistants.get(created.assistant_id)).rejects.toMatchObject({ status: 404 });
  });

  it("answers for a graph id as for its default assistant", async () => {
    const id = defaultAssistantId("agent");
    expect(id).toBe("fe096781-5601-53d2-b2f6-0d3403f7e9ca");
    await client.assistants.create({ graphId: "agent", assistantId: id, name: "agent", ifExists: "do_nothing" });
    expect((await client.assistants.get("agent")).assistant_id).toBe(id);
    expect((await client.assistants.update("agent", { metadata: { touched: true } })).assistant_id).toBe(id);
    expect((await client.assistants.getVersions("agent")).length).toBeGreaterThanOrEqual(2);
    expect((await client.assistants.setLatest("agent", 1)).version).toBe(1);
  });

  it("searches with filters, sorting and pagination headers, and counts", async () => {
    const tag = crypto.randomUUID();
    const names = ["c-one", "a-two", "b-three"];
    for (const name of names) await client.assistants.create({ graphId: "agent", name, metadata: { tag } });
    const page = await client.assistants.search({
      metadata: { tag },
      sortBy: "name",
      sortOrder: "asc",
      limit: 2,
      includePagination: true,
    });
    expect(page.assistants.map((a) => a.name)).toEqual(["a-two", "b-three"]);
    expect(page.next).toBe("2");
    const last = await call("POST", "/assistants/search", { metadata: { tag }, sort_by: "name", limit: 2, offset: 2 });
    expect(last.headers.get("x-pagination-total")).toBe("3");
    expect(last.headers.get("x-pagination-next")).toBeNull();
    expect(last.body.map((a: { name: string }) => a.name)).toEqual(["a-two"]);
    const selected = await client.assistants.search({
      metadata: { tag },
      name: "TWO",
      select: ["assistant_id", "name"],
    });
    expect(selected).toEqual([{ assistant_id: expect.any(String), name: "a-two" }]);
    expect(await client.assistants.count({ metadata: { tag } })).toBe(3);
    expect(await client.assistants.count({ metadata: { tag }, name: "three" })).toBe(1);
  });

  it("deletes the assistant's threads with delete_threads=true", async () => {
    const assistant = await client.assistants.create({ graphId: "agent" });
    const own = await client.threads.create({ metadata: { assistant_id: assistant.assistant_id } });
    const other = await client.threads.create({ metadata: { assistant_id: "someone-else" } });
    await client.assistants.delete(assistant.assistant_id, { deleteThreads: true });
    await expect(client.threads.get(own.thread_id)).rejects.toMatchObject({ status: 404 });
    expect((await client.threads.get(other.thread_id)).thread_id).toBe(other.thread_id);
  });

  it("accepts and ignores unknown body fields", async () => {
    const created = await call("POST", "/assistants", { graph_id: "agent", surprise: 1, name: null });
    expect(created.status).toBe(200);
    expect(created.body).not.toHaveProperty("surprise");
    expect(created.body.name).toBe("Untitled");
  });

  it("answers malformed requests with JSON 4xx and changes nothing", async () => {
    const kept = await client.assistants.create({ graphId: "agent", name: "kept", metadata: { keep: true } });
    const id = kept.assistant_id;
    const missing = crypto.randomUUID();
    const before = await client.assistants.count();
    const cases: [string, string, unknown, number][] = [
      ["POST", "/assistants", {}, 422],
      ["POST", "/assistants", "{not json", 422],
      ["POST", "/assistants", { graph_id: "nope" }, 404],
      ["POST", "/assistants", { graph_id: "agent", assistant_id: "not-a-uuid" }, 422],
      ["POST", "/assistants", { graph_id: "agent", config: [1] }, 422],
      ["POST", "/assistants", { graph_id: "agent", if_exists: "replace" }, 422],
      ["POST", "/assistants", { graph_id: "agent", assistant_id: id }, 409],
      ["POST", "/assistants/search", { limit: 0 }, 422],
      ["POST", "/assistants/search", { limit: 1001 }, 422],
      ["POST", "/assistants/search", { offset: -1 }, 422],
      ["POST", "/assistants/search", { sort_by: "color" }, 422],
      ["POST", "/assistants/count", { metadata: "x" }, 422],
      ["GET", "/assistants/not-a-uuid", undefined, 422],
      ["GET", `/assistants/${missing}`, undefined, 404],
      ["PATCH", `/assistants/${id}`, { graph_id: "nope" }, 404],
      ["PATCH", `/assistants/${id}`, { metadata: 5 }, 422],
      ["PATCH", `/assistants/${missing}`, { name: "x" }, 404],
      ["POST", `/assistants/${id}/latest`, {}, 422],
      ["POST", `/assistants/${id}/latest`, { version: "x" }, 422],
      ["POST", `/assistants/${id}/latest`, { version: 99 }, 404],
      ["POST", `/assistants/${id}/versions`, { limit: 0 }, 422],
      ["POST", `/assistants/${missing}/versions`, {}, 404],
      ["DELETE", `/assistants/${missing}`, undefined, 404],
      ["DELETE", `/assistants/${id}?delete_threads=maybe`, undefined, 422],
    ];
    for (const [method, path, body, status] of cases) {
      const res = await call(method, path, body);
      expect({ method, path, status: res.status }).toEqual({ method, path, status });
      if (status === 422)
        expect(res.body.detail[0]).toMatchObject({ loc: expect.any(Array), type: expect.any(String) });
      else expect(typeof res.body.detail).toBe("string");
    }
    expect(await client.assistants.get(id)).toEqual(kept);
    expect(await client.assistants.count()).toBe(before);
    expect((await client.assistants.getVersions(id)).length).toBe(1);
  });
});
