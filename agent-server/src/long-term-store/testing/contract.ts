import { setTimeout as sleep } from "node:timers/promises";
import { Annotation, END, type LangGraphRunnableConfig, MemorySaver, START, StateGraph } from "@langchain/langgraph";
import { InvalidNamespaceError, type Item, type SearchItem } from "@langchain/langgraph-checkpoint";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { LongTermStore, LongTermStoreOptions } from "../store.ts";
import { keywordEmbeddings, TOPICS } from "./keyword-embeddings.ts";

const keysOf = (items: { key: string }[]) => items.map((item) => item.key);

/**
 * Behaviour every long-term store backend must share. `make` returns a fresh, empty store
 * with the given options; `cleanup` releases it.
 */
export function longTermStoreContract(
  make: (options?: LongTermStoreOptions) => Promise<LongTermStore>,
  cleanup: (store: LongTermStore) => Promise<void> = async () => {},
): void {
  let store: LongTermStore;
  beforeEach(async () => {
    store = await make();
  });
  afterEach(() => cleanup(store));

  it("puts, gets, updates (keeping createdAt) and deletes items", async () => {
    expect(await store.get(["users", "u1"], "prefs")).toBeNull();
    await store.put(["users", "u1"], "prefs", { theme: "dark", sizes: [1, 2] });
    const first = await store.get(["users", "u1"], "prefs");
    expect(first).toMatchObject({ namespace: ["users", "u1"], key: "prefs", value: { theme: "dark", sizes: [1, 2] } });
    await sleep(5);
    await store.put(["users", "u1"], "prefs", { theme: "light" });
    const second = await store.get(["users", "u1"], "prefs");
    expect(second?.value).toEqual({ theme: "light" });
    expect(second?.createdAt).toEqual(first?.createdAt);
    expect(second?.updatedAt.getTime()).toBeGreaterThan(first?.updatedAt.getTime() ?? Number.POSITIVE_INFINITY);
    await store.delete(["users", "u1"], "prefs");
    expect(await store.get(["users", "u1"], "prefs")).toBeNull();
    await store.batch([{ namespace: ["users", "u1"], key: "other", value: { a: 1 } }]);
    await store.batch([{ namespace: ["users", "u1"], key: "other", value: null }]);
    expect(await store.search(["users"])).toEqual([]);
  });

  it("keeps stored values apart from the caller's objects", async () => {
    const value = { nested: { count: 1 } };
    await store.put(["ns"], "k", value);
    value.nested.count = 2;
    const read = await store.get(["ns"], "k");
    expect(read?.value).toEqual({ nested: { count: 1 } });
  });

  it("runs batch operations in order", async () => {
    const results = await store.batch([
      { namespace: ["b"], key: "k" },
      { namespace: ["b"], key: "k", value: { v: 1 } },
      { namespace: ["b"], key: "k" },
      { namespacePrefix: ["b"], limit: 10, offset: 0 },
    ]);
    const [before, , after, found] = results as unknown as [Item | null, undefined, Item | null, SearchItem[]];
    expect(before).toBeNull();
    expect(after?.value).toEqual({ v: 1 });
    expect(keysOf(found ?? [])).toEqual(["k"]);
  });

  it("rejects invalid namespaces", async () => {
    await expect(store.put(["a.b"], "k", {})).rejects.toBeInstanceOf(InvalidNamespaceError);
    await expect(store.put([], "k", {})).rejects.toBeInstanceOf(InvalidNamespaceError);
    await expect(store.put(["a", ""], "k", {})).rejects.toBeInstanceOf(InvalidNamespaceError);
    await expect(store.search(["a:b"])).rejects.toBeInstanceOf(InvalidNamespaceError);
  });

  it("searches a namespace prefix, newest update first, with limit and offset", async () => {
    await store.put(["docs"], "root", { n: 0 });
    await store.put(["docs", "a"], "one", { n: 1 });
    await store.put(["docs", "a", "deep"], "two", { n: 2 });
    await store.put(["docsx"], "outside", { n: 3 });
    await store.put(["other"], "outside", { n: 4 });
    await store.put(["docs", "a"], "one", { n: 1, touched: true });

    expect(keysOf(await store.search(["docs"]))).toEqual(["one", "two", "root"]);
    expect(keysOf(await store.search(["docs", "a"]))).toEqual(["one", "two"]);
    expect(keysOf(await store.search(["docs"], { limit: 1, offset: 1 }))).toEqual(["two"]);
    expect(keysOf(await store.search(["docs"], { limit: 0 }))).toEqual([]);
    expect(keysOf(await store.search([]))).toEqual(["one", "outside", "outside", "two", "root"]);
    // No embedding index: a query does not rank, the result is the plain search.
    expect(keysOf(await store.search(["docs"], { query: "anything" }))).toEqual(["one", "two", "root"]);
  });

  it("pages through many items across namespaces in update order, with and without a filter", async () => {
    const written: string[] = [];
    for (let i = 0; i < 270; i++) {
      await store.put(["many", `n${i % 3}`], `k${i}`, { i, seventh: i % 7 === 0 });
      written.unshift(`k${i}`);
    }
    const sevenths = written.filter((key) => Number(key.slice(1)) % 7 === 0);
    expect(keysOf(await store.search(["many"], { limit: 50, offset: 100 }))).toEqual(written.slice(100, 150));
    expect(keysOf(await store.search(["many"], { filter: { seventh: true }, limit: 20, offset: 15 }))).toEqual(
      sevenths.slice(15, 35),
    );
    expect(keysOf(await store.search(["many", "n1"], { limit: 500 }))).toEqual(
      written.filter((key) => Number(key.slice(1)) % 3 === 1),
    );
  });

  it("filters on value fields by equality and comparison operators", async () => {
    await store.put(["f"], "a", { kind: "note", score: 1, tags: ["x"], meta: { lang: "en" } });
    await store.put(["f"], "b", { kind: "note", score: 5, tags: ["y"], meta: { lang: "de" } });
    await store.put(["f"], "c", { kind: "todo", score: 9, name: "zed" });
    const search = async (filter: Record<string, unknown>) => keysOf(await store.search(["f"], { filter })).sort();

    expect(await search({ kind: "note" })).toEqual(["a", "b"]);
    expect(await search({ kind: "note", score: 5 })).toEqual(["b"]);
    expect(await search({ meta: { lang: "en" } })).toEqual(["a"]);
    expect(await search({ tags: ["y"] })).toEqual(["b"]);
    expect(await search({ kind: { $eq: "todo" } })).toEqual(["c"]);
    expect(await search({ kind: { $ne: "todo" } })).toEqual(["a", "b"]);
    expect(await search({ score: { $gt: 1 } })).toEqual(["b", "c"]);
    expect(await search({ score: { $gte: 5, $lt: 9 } })).toEqual(["b"]);
    expect(await search({ score: { $lte: 1 } })).toEqual(["a"]);
    expect(await search({ name: { $gt: "a" } })).toEqual(["c"]);
    expect(await search({ score: { $in: [1, 9] } })).toEqual(["a", "c"]);
    expect(await search({ missing: "x" })).toEqual([]);
    expect(keysOf(await store.search(["f"], { filter: { kind: "note" }, limit: 1, offset: 1 }))).toEqual(["a"]);
  });

  it("lists namespaces by prefix, suffix with wildcards, depth, limit and offset", async () => {
    for (const namespace of [
      ["a", "b", "c"],
      ["a", "b", "d"],
      ["a", "x", "c"],
      ["z", "b"],
    ]) {
      await store.put(namespace, "k", { v: 1 });
    }
    expect(await store.listNamespaces()).toEqual([
      ["a", "b", "c"],
      ["a", "b", "d"],
      ["a", "x", "c"],
      ["z", "b"],
    ]);
    expect(await store.listNamespaces({ prefix: ["a", "b"] })).toEqual([
      ["a", "b", "c"],
      ["a", "b", "d"],
    ]);
    expect(await store.listNamespaces({ prefix: ["a", "*", "c"] })).toEqual([
      ["a", "b", "c"],
      ["a", "x", "c"],
    ]);
    expect(await store.listNamespaces({ suffix: ["c"] })).toEqual([
      ["a", "b", "c"],
      ["a", "x", "c"],
    ]);
    expect(await store.listNamespaces({ suffix: ["*", "b"] })).toEqual([["z", "b"]]);
    expect(await store.listNamespaces({ maxDepth: 2 })).toEqual([
      ["a", "b"],
      ["a", "x"],
      ["z", "b"],
    ]);
    expect(await store.listNamespaces({ limit: 2, offset: 1 })).toEqual([
      ["a", "b", "d"],
      ["a", "x", "c"],
    ]);
    await store.delete(["z", "b"], "k");
    expect(await store.listNamespaces({ prefix: ["z"] })).toEqual([]);
  });

  it("expires items after their TTL in minutes: never returned again", async () => {
    await store.put(["t"], "short", { v: 1 }, undefined, { ttl: 0.005 });
    await store.put(["t"], "forever", { v: 2 });
    await store.put(["t2"], "short", { v: 3 }, undefined, { ttl: 0.005 });
    expect(await store.get(["t"], "short")).not.toBeNull();
    await sleep(450);
    expect(await store.get(["t"], "short", { refreshTtl: false })).toBeNull();
    expect(keysOf(await store.search(["t"]))).toEqual(["forever"]);
    expect(await store.listNamespaces()).toEqual([["t"]]);
    // Writing again after expiry starts a new life (new createdAt).
    await store.put(["t"], "short", { v: 4 });
    expect((await store.get(["t"], "short"))?.value).toEqual({ v: 4 });
  });

  it("refreshes the TTL on read unless told not to", async () => {
    await store.put(["r"], "refreshed", { v: 1 }, undefined, { ttl: 0.02 });
    await store.put(["r"], "untouched", { v: 2 }, undefined, { ttl: 0.02 });
    await sleep(800);
    expect(await store.get(["r"], "refreshed")).not.toBeNull();
    expect(await store.get(["r"], "untouched", { refreshTtl: false })).not.toBeNull();
    await sleep(800);
    expect(await store.get(["r"], "refreshed", { refreshTtl: false })).not.toBeNull();
    expect(await store.get(["r"], "untouched", { refreshTtl: false })).toBeNull();
  });

  it("applies the store's default TTL unless a put says otherwise, and sweeps expired items", async () => {
    const expiring = await make({ ttl: { defaultTtl: 0.005, refreshOnRead: false } });
    try {
      await expiring.put(["d"], "default", { v: 1 });
      await expiring.put(["d"], "kept", { v: 2 }, undefined, { ttl: null });
      await expiring.put(["e"], "default", { v: 3 });
      await sleep(450);
      expect(await expiring.sweepExpired()).toBe(2);
      expect(await expiring.sweepExpired()).toBe(0);
      expect(keysOf(await expiring.search([]))).toEqual(["kept"]);
      expect(await expiring.listNamespaces()).toEqual([["d"]]);
    } finally {
      await cleanup(expiring);
    }
  });

  it("ranks search results by similarity to a query when the store has an index", async () => {
    const indexed = await make({ index: { dims: TOPICS.length, embeddings: keywordEmbeddings, fields: ["text"] } });
    try {
      await indexed.put(["pets", "u1"], "cats", { text: "my cat and another cat", tag: "a" });
      await indexed.put(["pets", "u1"], "dogs", { text: "a dog", tag: "a" });
      await indexed.put(["pets", "u2"], "mixed", { text: "cat, dog, tea", tag: "b" });
      await indexed.put(["pets", "u2"], "silent", { text: "cat cat cat" }, false);
      await indexed.put(["pets", "u2"], "titled", { title: "dog tea" }, ["title"]);
      await indexed.put(["pets", "u2"], "empty", { other: 1 });

      const cats = await indexed.search(["pets"], { query: "cat" });
      expect(keysOf(cats)).toEqual(["cats", "mixed", "titled", "dogs", "empty", "silent"]);
      expect(cats[0]?.score).toBeCloseTo(1);
      expect(cats[1]?.score).toBeCloseTo(1 / Math.sqrt(3));
      expect(cats.slice(2, 4).map((item) => item.score)).toEqual([0, 0]);
      expect(cats.slice(4).every((item) => item.score === undefined)).toBe(true);

      expect(keysOf(await indexed.search(["pets"], { query: "tea", filter: { tag: "b" } }))).toEqual(["mixed"]);
      expect(keysOf(await indexed.search(["pets"], { query: "dog tea", limit: 2, offset: 0 }))).toEqual([
        "titled",
        "mixed",
      ]);
      expect(keysOf(await indexed.search(["pets", "u1"], { query: "dog", limit: 1, offset: 1 }))).toEqual(["cats"]);
      // Without a query the order stays newest first; a new version replaces the vectors.
      expect(keysOf(await indexed.search(["pets"], { limit: 2 }))).toEqual(["empty", "titled"]);
      await indexed.put(["pets", "u1"], "dogs", { text: "now a car" });
      expect((await indexed.search(["pets", "u1"], { query: "car" }))[0]).toMatchObject({ key: "dogs", score: 1 });
      await indexed.delete(["pets", "u1"], "dogs");
      expect(keysOf(await indexed.search(["pets", "u1"], { query: "car" }))).toEqual(["cats"]);
      // Vectors of the wrong size are refused, and the item is not written.
      const wrong = await make({ index: { dims: 3, embeddings: keywordEmbeddings, fields: ["$"] } });
      try {
        await expect(wrong.put(["x"], "k", { text: "cat" })).rejects.toThrow("store.index.dims is 3");
        expect(await wrong.get(["x"], "k")).toBeNull();
      } finally {
        await cleanup(wrong);
      }
    } finally {
      await cleanup(indexed);
    }
  });

  it("serves a real LangGraph graph as its store", async () => {
    const State = Annotation.Root({ user: Annotation<string>, seen: Annotation<number> });
    const graph = new StateGraph(State)
      .addNode("remember", async (state, config: LangGraphRunnableConfig) => {
        const memories = ["memories", state.user];
        await config.store?.put(memories, `m${Date.now()}${Math.random()}`, { text: "hello" });
        return { seen: (await config.store?.search(memories))?.length ?? 0 };
      })
      .addEdge(START, "remember")
      .addEdge("remember", END)
      .compile({ checkpointer: new MemorySaver(), store });
    const config = { configurable: { thread_id: "t" } };
    expect((await graph.invoke({ user: "ann" }, config)).seen).toBe(1);
    expect((await graph.invoke({ user: "ann" }, config)).seen).toBe(2);
    expect((await graph.invoke({ user: "bob" }, config)).seen).toBe(1);
    expect(await store.listNamespaces({ prefix: ["memories"] })).toEqual([
      ["memories", "ann"],
      ["memories", "bob"],
    ]);
  });
}
