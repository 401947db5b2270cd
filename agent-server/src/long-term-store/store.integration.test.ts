import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { waitUntil } from "../runs/testing/wait.ts";
import { defaultModules } from "../server.ts";
import { storeApiModule } from "./module.ts";
import { type ExtensionTestServer, startExtensionServer } from "./testing/server.ts";

const json = { "content-type": "application/json" };

describe("store API over HTTP on Redis", () => {
  let app: ExtensionTestServer;
  const request = (method: string, path: string, body?: unknown) =>
    fetch(`${app.url}${path}`, { method, headers: json, body: body === undefined ? undefined : JSON.stringify(body) });

  beforeAll(async () => {
    app = await startExtensionServer(testRedisUrl(), {
      prefix: uniquePrefix("store-api"),
      modules: [
        ...defaultModules().filter((module) => module.name !== "store"),
        storeApiModule({ maxValueBytes: 2048 }),
      ],
    });
  });
  afterAll(() => app?.close());

  it("puts, gets, searches, lists and deletes items through the official SDK", async () => {
    const { store } = app.client;
    await store.putItem(["docs", "u1"], "a", { title: "A", rank: 1 });
    await store.putItem(["docs", "u1"], "b", { title: "B", rank: 2 });
    await store.putItem(["docs", "u2"], "c", { title: "C", rank: 3 });

    const item = await store.getItem(["docs", "u1"], "a");
    expect(item).toMatchObject({ namespace: ["docs", "u1"], key: "a", value: { title: "A", rank: 1 } });
    expect(Date.parse(item?.createdAt as string)).toBeGreaterThan(0);
    expect(await store.getItem(["docs", "u1"], "missing")).toBeNull();

    const all = await store.searchItems(["docs"]);
    expect(all.items.map((i) => i.key)).toEqual(["c", "b", "a"]);
    const filtered = await store.searchItems(["docs"], { filter: { rank: { $gte: 2 } }, limit: 1, offset: 1 });
    expect(filtered.items.map((i) => i.key)).toEqual(["b"]);
    const queried = await store.searchItems(["docs", "u1"], { query: "anything" });
    expect(queried.items.map((i) => i.key)).toEqual(["b", "a"]);

    expect(await store.listNamespaces({ prefix: ["docs"] })).toEqual({
      namespaces: [
        ["docs", "u1"],
        ["docs", "u2"],
      ],
    });
    expect(await store.listNamespaces({ prefix: ["docs"], maxDepth: 1 })).toEqual({ namespaces: [["docs"]] });
    expect(await store.listNamespaces({ suffix: ["u2"] })).toEqual({ namespaces: [["docs", "u2"]] });

    await store.deleteItem(["docs", "u1"], "a");
    expect(await store.getItem(["docs", "u1"], "a")).toBeNull();
  });

  it("expires items after their ttl and refreshes it on read unless told not to", async () => {
    const { store } = app.client;
    // 0.02 minutes = 1.2 s, for both: `untouched` going marks the end of `refreshed`'s first TTL.
    await store.putItem(["ttl"], "refreshed", { v: 1 }, { ttl: 0.02 });
    await store.putItem(["ttl"], "untouched", { v: 2 }, { ttl: 0.02 });
    await store.putItem(["ttl"], "forever", { v: 3 }, { ttl: null });
    const bothRead = async () => {
      expect(await store.getItem(["ttl"], "refreshed", { refreshTtl: true })).not.toBeNull();
      return (await store.getItem(["ttl"], "untouched", { refreshTtl: false })) === null;
    };
    // Reads that do not refresh keep nothing alive; refreshing ones do, past the TTL set at put.
    await waitUntil(bothRead, "the item read without refreshing expires", 5000);
    const gone = async () => (await store.getItem(["ttl"], "refreshed", { refreshTtl: false })) === null;
    expect(await gone()).toBe(false);
    await waitUntil(gone, "the refreshed item expires once reads stop refreshing it", 5000);
    expect(await store.getItem(["ttl"], "forever")).not.toBeNull();
  });

  it("answers bad input with 4xx JSON and keeps what is stored", async () => {
    await app.client.store.putItem(["safe"], "k", { kept: true });
    const cases: [string, string, unknown, number][] = [
      ["PUT", "/store/items", { namespace: ["a.b"], key: "k", value: {} }, 422],
      ["PUT", "/store/items", { namespace: ["a", ""], key: "k", value: {} }, 422],
      ["PUT", "/store/items", { namespace: [], key: "k", value: {} }, 422],
      ["PUT", "/store/items", { namespace: ["langgraph"], key: "k", value: {} }, 422],
      ["PUT", "/store/items", { namespace: ["safe"], key: "k", value: "not an object" }, 422],
      ["PUT", "/store/items", { namespace: ["safe"], key: "k", value: {}, ttl: -1 }, 422],
      ["PUT", "/store/items", { namespace: ["safe"], key: "k", value: { blob: "x".repeat(4096) } }, 413],
      ["POST", "/store/items/search", { namespace_prefix: ["a:b"] }, 422],
      ["POST", "/store/items/search", { limit: 0 }, 422],
      ["POST", "/store/namespaces", { max_depth: "deep" }, 422],
      ["DELETE", "/store/items", { namespace: ["safe"] }, 422],
    ];
    for (const [method, path, body, status] of cases) {
      const response = await request(method, path, body);
      expect({ body, status: response.status }).toEqual({ body, status });
      const error = (await response.json()) as { detail: unknown };
      expect(error.detail).toBeDefined();
    }
    const periods = await request("PUT", "/store/items", { namespace: ["a.b"], key: "k", value: {} });
    expect(JSON.stringify(await periods.json())).toContain("cannot be empty or contain periods");
    const missingKey = await fetch(`${app.url}/store/items?namespace=safe`);
    expect(missingKey.status).toBe(422);
    const get = await fetch(`${app.url}/store/items?namespace=safe&key=k`);
    expect(await get.json()).toMatchObject({ namespace: ["safe"], key: "k", value: { kept: true } });
  });

  it("shares items with graphs: a graph's writes are readable over HTTP and vice versa", async () => {
    const { client } = app;
    await client.store.putItem(["memories", "ada"], "from-http", { text: "likes tea" });
    const result = (await client.runs.wait(null, "memory", { input: { user: "ada", note: "works on engines" } })) as {
      recalled: string[];
    };
    expect(result.recalled.sort()).toEqual(["likes tea", "works on engines"]);
    const found = await client.store.searchItems(["memories", "ada"]);
    expect(found.items.map((item) => item.value.text).sort()).toEqual(["likes tea", "works on engines"]);
  });

  it("reports the store and that semantic search is not available in /info", async () => {
    const info = (await (await fetch(`${app.url}/info`)).json()) as { flags: Record<string, boolean> };
    expect(info.flags.store).toBe(true);
    expect(info.flags.store_semantic_search).toBe(false);
  });
});
