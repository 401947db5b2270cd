import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { waitUntil } from "../runs/testing/wait.ts";
import { type ExtensionTestServer, startExtensionServer, storeConfigFixture } from "./testing/server.ts";

/** The `store` section of `langgraph.json` (TTL defaults, semantic index) through the API, on both storages. */

describe.each([
  ["Redis", () => testRedisUrl()],
  ["in-memory", () => undefined],
])("store section of langgraph.json on %s storage", (_kind, redisUrl) => {
  let app: ExtensionTestServer;

  beforeAll(async () => {
    app = await startExtensionServer(redisUrl(), {
      prefix: uniquePrefix("store-config"),
      configPath: storeConfigFixture,
    });
  });
  afterAll(() => app?.close());

  it("expires items put without a TTL after store.ttl.default_ttl, and reads do not extend them", async () => {
    const { store } = app.client;
    const putAt = Date.now();
    await store.putItem(["notes"], "default", { text: "goes" });
    await store.putItem(["notes"], "forever", { text: "stays" }, { ttl: null });
    expect(await store.getItem(["notes"], "default")).toMatchObject({ value: { text: "goes" } });

    // Read until it expires: with refresh_on_read every read would push the expiry on and it never would.
    await waitUntil(
      async () => (await store.getItem(["notes"], "default")) === null,
      "the item put without a TTL expires",
      5000,
    );
    // Not before the 1.2 s default (a little slack for Redis's clock against this process's).
    expect(Date.now() - putAt).toBeGreaterThanOrEqual(1150);
    expect((await store.searchItems(["notes"])).items.map((item) => item.key)).toEqual(["forever"]);
  });

  it("ranks search results by similarity to `query` with store.index, scores included", async () => {
    const { store } = app.client;
    const ttl = { ttl: null };
    await store.putItem(["kb"], "tea", { text: "green tea and black tea" }, ttl);
    await store.putItem(["kb"], "pets", { text: "a cat and a dog" }, ttl);
    await store.putItem(["kb"], "both", { text: "a cat drinking tea" }, ttl);
    await store.putItem(["kb"], "unindexed", { text: "tea tea tea" }, { ...ttl, index: false });

    const { items } = await store.searchItems(["kb"], { query: "tea please" });
    expect(items.map((item) => item.key)).toEqual(["tea", "both", "pets", "unindexed"]);
    expect(items.map((item) => item.score)).toEqual([
      expect.closeTo(1),
      expect.closeTo(Math.SQRT1_2),
      expect.closeTo(0),
      undefined,
    ]);
    const page = await store.searchItems(["kb"], { query: "dog", limit: 1, offset: 0 });
    expect(page.items.map((item) => [item.key, item.score])).toEqual([["pets", expect.closeTo(Math.SQRT1_2)]]);
    const info = (await (await fetch(`${app.url}/info`)).json()) as { flags: Record<string, boolean> };
    expect(info.flags.store_semantic_search).toBe(true);
    // Without a query the order is the usual newest first, with no scores.
    const plain = await store.searchItems(["kb"], { limit: 2 });
    expect(plain.items.map((item) => [item.key, item.score])).toEqual([
      ["unindexed", undefined],
      ["both", undefined],
    ]);
  });

  it("answers a malformed index path with 422, and indexes nothing for a key the value only inherits", async () => {
    const put = (index: unknown) =>
      fetch(`${app.url}/store/items`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ namespace: ["paths"], key: "k", value: { text: "tea" }, index, ttl: null }),
      });
    for (const index of [["a[]"], [""], ["a..b"], ["tags[x]"]]) {
      const res = await put(index);
      expect(res.status, JSON.stringify(index)).toBe(422);
      expect(((await res.json()) as { detail: { loc: unknown[] }[] }).detail[0]?.loc).toEqual(["body", "index", 0]);
    }
    expect(await app.client.store.getItem(["paths"], "k")).toBeNull();
    // `constructor` is a key of every object's prototype, not of the value: no text, no vector.
    expect((await put(["constructor"])).status).toBe(204);
    const { items } = await app.client.store.searchItems(["paths"], { query: "tea" });
    expect(items.map((item) => [item.key, item.score])).toEqual([["k", undefined]]);
  });
});
