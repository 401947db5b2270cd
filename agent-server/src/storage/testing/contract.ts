import { HttpError } from "@agentplane/common";
import { v7 as uuidv7 } from "uuid";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { compareThreads } from "../../threads/records.ts";
import type { Storage, Thread, ThreadSearch } from "../types.ts";

const conflictError = (detail: string) => expect.objectContaining({ status: 409, detail }) as unknown as HttpError;
const search = (query: Partial<ThreadSearch>): ThreadSearch => ({
  limit: 10,
  offset: 0,
  sort_by: "created_at",
  sort_order: "desc",
  ...query,
});
const ids = (threads: Thread[]) => threads.map((t) => t.thread_id);

/**
 * The rules every Storage backend must follow, registered as vitest tests. Each test gets a
 * fresh, empty storage from `makeStorage`.
 */
export function storageContract(makeStorage: () => Promise<Storage>): void {
  let storage: Storage;
  beforeEach(async () => {
    storage = await makeStorage();
  });
  afterEach(() => storage.close());

  it("answers ping and bundles a working long-term store", async () => {
    await expect(storage.ping()).resolves.toBeUndefined();
    await storage.store.put(["users", "u1"], "prefs", { theme: "dark" });
    expect((await storage.store.get(["users", "u1"], "prefs"))?.value).toEqual({ theme: "dark" });
  });

  describe("assistants", () => {
    it("creates version 1 with defaults and honours if_exists", async () => {
      const created = await storage.assistants.create({ graph_id: "agent", metadata: { team: "a" } });
      expect(created).toMatchObject({
        graph_id: "agent",
        version: 1,
        name: "Untitled",
        description: null,
        config: {},
        context: {},
        metadata: { team: "a" },
      });
      expect(await storage.assistants.get(created.assistant_id)).toEqual(created);
      const again = { assistant_id: created.assistant_id, graph_id: "agent", name: "other" };
      await expect(storage.assistants.create(again)).rejects.toEqual(conflictError("Assistant already exists"));
      expect(await storage.assistants.create({ ...again, if_exists: "do_nothing" })).toEqual(created);
      expect(await storage.assistants.get(uuidv7())).toBeUndefined();
    });

    it("patches into max+1 versions: config/context replaced, metadata merged", async () => {
      const created = await storage.assistants.create({
        graph_id: "agent",
        config: { configurable: { a: 1 } },
        context: { x: 1 },
        metadata: { keep: 1, change: 1 },
      });
      const patched = await storage.assistants.patch(created.assistant_id, {
        config: { tags: ["t"] },
        metadata: { change: 2 },
        name: "renamed",
        description: "about",
      });
      expect(patched).toMatchObject({
        version: 2,
        config: { tags: ["t"] },
        context: { x: 1 },
        metadata: { keep: 1, change: 2 },
        name: "renamed",
        description: "about",
        created_at: created.created_at,
      });
      expect(await storage.assistants.get(created.assistant_id)).toEqual(patched);
      const versions = await storage.assistants.versions(created.assistant_id, { limit: 10, offset: 0 });
      expect(versions.map((v) => v.version)).toEqual([2, 1]);
      expect(versions[1]).toMatchObject({ config: { configurable: { a: 1 } }, metadata: { keep: 1, change: 1 } });
      expect(versions[0]).not.toHaveProperty("updated_at");
      expect(await storage.assistants.patch(uuidv7(), { name: "x" })).toBeUndefined();
    });

    it("setLatest restores an older version; later patches continue from max+1", async () => {
      const { assistant_id } = await storage.assistants.create({ graph_id: "agent", config: { tags: ["v1"] } });
      await storage.assistants.patch(assistant_id, { config: { tags: ["v2"] }, name: "second" });
      const restored = await storage.assistants.setLatest(assistant_id, 1);
      expect(restored).toMatchObject({ version: 1, config: { tags: ["v1"] }, name: "Untitled" });
      expect(await storage.assistants.get(assistant_id)).toEqual(restored);
      const third = await storage.assistants.patch(assistant_id, { metadata: { n: 3 } });
      expect(third).toMatchObject({ version: 3, config: { tags: ["v1"] }, metadata: { n: 3 } });
      expect(await storage.assistants.setLatest(assistant_id, 4)).toBeUndefined();
      expect(await storage.assistants.setLatest(uuidv7(), 1)).toBeUndefined();
      const page = await storage.assistants.versions(assistant_id, { limit: 1, offset: 1 });
      expect(page.map((v) => v.version)).toEqual([2]);
      const tagged = await storage.assistants.versions(assistant_id, { metadata: { n: 3 }, limit: 10, offset: 0 });
      expect(tagged.map((v) => v.version)).toEqual([3]);
    });

    it("searches by graph, name substring and metadata containment, sorted and paged", async () => {
      const make = (name: string, graph_id: string, metadata: Record<string, unknown>) =>
        storage.assistants.create({ name, graph_id, metadata });
      const alpha = await make("Alpha Bot", "agent", { owner: { team: "x", id: 1 }, tier: "gold" });
      const beta = await make("beta helper", "agent", { owner: { team: "y" }, tier: "gold" });
      const gamma = await make("Gamma", "other", { tier: "silver" });
      const base = { limit: 10, offset: 0, sort_by: "name", sort_order: "asc" } as const;
      const names = async (query: object) =>
        (await storage.assistants.search({ ...base, ...query })).items.map((a) => a.name);
      expect(await names({})).toEqual(["Alpha Bot", "Gamma", "beta helper"]);
      expect(await names({ sort_order: "desc" })).toEqual(["beta helper", "Gamma", "Alpha Bot"]);
      expect(await names({ graph_id: "agent" })).toEqual(["Alpha Bot", "beta helper"]);
      expect(await names({ name: "BOT" })).toEqual(["Alpha Bot"]);
      expect(await names({ metadata: { tier: "gold", owner: { team: "x" } } })).toEqual(["Alpha Bot"]);
      expect(await names({ metadata: { owner: { team: "x", id: 2 } } })).toEqual([]);
      const page = await storage.assistants.search({ ...base, limit: 1, offset: 1 });
      expect(page).toEqual({ items: [gamma], total: 3 });
      const byCreation = await storage.assistants.search({ ...base, sort_by: "created_at", sort_order: "asc" });
      expect(byCreation.items.map((a) => a.assistant_id)).toEqual(
        [alpha, beta, gamma]
          .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.assistant_id.localeCompare(b.assistant_id))
          .map((a) => a.assistant_id),
      );
      expect(await storage.assistants.count({})).toBe(3);
      expect(await storage.assistants.count({ metadata: { tier: "gold" }, graph_id: "agent" })).toBe(2);
    });

    it("deletes an assistant with its versions", async () => {
      const { assistant_id } = await storage.assistants.create({ graph_id: "agent" });
      await storage.assistants.patch(assistant_id, { name: "v2" });
      expect(await storage.assistants.delete(assistant_id)).toBe(true);
      expect(await storage.assistants.get(assistant_id)).toBeUndefined();
      expect(await storage.assistants.versions(assistant_id, { limit: 10, offset: 0 })).toEqual([]);
      expect(await storage.assistants.count({})).toBe(0);
      expect(await storage.assistants.delete(assistant_id)).toBe(false);
      const recreated = await storage.assistants.create({ assistant_id, graph_id: "agent" });
      expect(recreated.version).toBe(1);
    });
  });

  describe("threads", () => {
    it("creates idle threads and honours if_exists", async () => {
      const thread = await storage.threads.create({ metadata: { graph_id: "agent" } });
      expect(thread).toMatchObject({
        status: "idle",
        metadata: { graph_id: "agent" },
        values: null,
        interrupts: {},
        config: {},
      });
      expect(thread.state_updated_at).toBe(thread.created_at);
      expect(await storage.threads.get(thread.thread_id)).toEqual(thread);
      const again = { thread_id: thread.thread_id, metadata: { other: true } };
      await expect(storage.threads.create(again)).rejects.toEqual(conflictError("Thread already exists"));
      expect(await storage.threads.create({ ...again, if_exists: "do_nothing" })).toEqual(thread);
      expect(await storage.threads.get(uuidv7())).toBeUndefined();
    });

    it("merges metadata and applies server fields on update", async () => {
      const thread = await storage.threads.create({ metadata: { a: 1, b: { c: 1 } } });
      await new Promise((r) => setTimeout(r, 5));
      const updated = await storage.threads.update(thread.thread_id, { metadata: { b: { d: 2 }, e: 3 } });
      expect(updated?.metadata).toEqual({ a: 1, b: { d: 2 }, e: 3 });
      expect(String(updated?.updated_at) > thread.updated_at).toBe(true);
      expect(updated?.state_updated_at).toBe(thread.state_updated_at);
      const ran = await storage.threads.update(thread.thread_id, {
        status: "interrupted",
        values: { messages: ["hi"] },
        interrupts: { task: [{ id: "i", value: "ask" }] },
        config: { configurable: { model: "m" } },
        state_updated: true,
      });
      expect(ran).toMatchObject({
        status: "interrupted",
        values: { messages: ["hi"] },
        config: { configurable: { model: "m" } },
      });
      expect(ran?.state_updated_at).toBe(ran?.updated_at);
      expect(await storage.threads.get(thread.thread_id)).toEqual(ran);
      expect(await storage.threads.update(uuidv7(), { status: "busy" })).toBeUndefined();
    });

    it("filters by status, metadata (scalar and nested), values and ids, with totals", async () => {
      const a = await storage.threads.create({ metadata: { user: "u1", org: { id: 7, region: "eu" }, n: 1 } });
      const b = await storage.threads.create({ metadata: { user: "u1", flag: true, n: 2 } });
      const c = await storage.threads.create({ metadata: { user: "u2", flag: null } });
      await storage.threads.update(b.thread_id, { status: "busy", values: { topic: "x", deep: { k: [1, 2] } } });
      const found = async (filter: Partial<ThreadSearch>) =>
        ids((await storage.threads.search(search(filter))).items).sort();
      expect(await found({ status: "idle" })).toEqual(ids([a, c]).sort());
      expect(await found({ metadata: { user: "u1" } })).toEqual(ids([a, b]).sort());
      expect(await found({ metadata: { user: "u1", status_missing: 1 } })).toEqual([]);
      expect(await found({ metadata: { user: "u1" }, status: "busy" })).toEqual([b.thread_id]);
      expect(await found({ metadata: { org: { region: "eu" } } })).toEqual([a.thread_id]);
      expect(await found({ metadata: { org: { region: "us" } } })).toEqual([]);
      expect(await found({ metadata: { flag: true } })).toEqual([b.thread_id]);
      expect(await found({ metadata: { flag: null } })).toEqual([c.thread_id]);
      expect(await found({ metadata: { n: 2 } })).toEqual([b.thread_id]);
      expect(await found({ values: { deep: { k: [1, 2] } } })).toEqual([b.thread_id]);
      expect(await found({ values: { deep: { k: [1] } } })).toEqual([]);
      expect(await found({ ids: [a.thread_id, c.thread_id, uuidv7()] })).toEqual(ids([a, c]).sort());
      expect(await found({ ids: [a.thread_id, b.thread_id], status: "busy" })).toEqual([b.thread_id]);
      expect(await storage.threads.count({})).toBe(3);
      expect(await storage.threads.count({ metadata: { user: "u1" } })).toBe(2);
      expect(await storage.threads.count({ status: "busy", values: { topic: "x" } })).toBe(1);
      const page = await storage.threads.search(search({ metadata: { user: "u1" }, limit: 1 }));
      expect(page.total).toBe(2);
      expect(page.items).toHaveLength(1);
    });

    it("sorts by every field in both directions and pages with offset", async () => {
      const created: Thread[] = [];
      for (let i = 0; i < 6; i++) created.push(await storage.threads.create({ metadata: { batch: "s" } }));
      const statuses = ["busy", "error", "idle", "interrupted", "busy", "error"] as const;
      const latest = new Map<string, Thread>();
      for (const [i, thread] of [...created].reverse().entries()) {
        await new Promise((r) => setTimeout(r, 2));
        const updated = await storage.threads.update(thread.thread_id, {
          status: statuses[i],
          state_updated: i % 2 === 0,
        });
        if (updated) latest.set(updated.thread_id, updated);
      }
      const all = [...latest.values()];
      for (const sort_by of ["thread_id", "status", "created_at", "updated_at", "state_updated_at"] as const) {
        for (const sort_order of ["asc", "desc"] as const) {
          const expected = ids([...all].sort(compareThreads(sort_by, sort_order)));
          for (const filter of [{}, { metadata: { batch: "s" } }]) {
            const first = await storage.threads.search(search({ ...filter, sort_by, sort_order, limit: 4 }));
            const second = await storage.threads.search(
              search({ ...filter, sort_by, sort_order, limit: 4, offset: 4 }),
            );
            expect([...ids(first.items), ...ids(second.items)], `${sort_by} ${sort_order}`).toEqual(expected);
            expect(first.total).toBe(6);
          }
        }
      }
    });

    it("pages large filtered sets in sort order", async () => {
      const threads = await Promise.all(
        Array.from({ length: 2100 }, (_, i) => storage.threads.create({ metadata: { big: "yes", odd: i % 2 === 1 } })),
      );
      await storage.threads.create({ metadata: { big: "no" } });
      const expected = ids(threads.sort(compareThreads("created_at", "desc")));
      const first = await storage.threads.search(search({ metadata: { big: "yes" }, limit: 50, offset: 1000 }));
      expect(first.total).toBe(2100);
      expect(ids(first.items)).toEqual(expected.slice(1000, 1050));
      const odd = threads.filter((t) => t.metadata.odd === true).sort(compareThreads("thread_id", "asc"));
      const page = await storage.threads.search(
        search({ metadata: { big: "yes", odd: true }, sort_by: "thread_id", sort_order: "asc", limit: 5, offset: 3 }),
      );
      expect(page.total).toBe(1050);
      expect(ids(page.items)).toEqual(ids(odd.slice(3, 8)));
    });

    it("keeps indexes consistent after updates and deletes", async () => {
      const thread = await storage.threads.create({ metadata: { owner: "a", tag: "t1" } });
      await storage.threads.update(thread.thread_id, { status: "busy", metadata: { owner: "b" } });
      expect(await storage.threads.count({ status: "idle" })).toBe(0);
      expect(await storage.threads.count({ status: "busy" })).toBe(1);
      expect(await storage.threads.count({ metadata: { owner: "a" } })).toBe(0);
      expect(await storage.threads.count({ metadata: { owner: "b", tag: "t1" } })).toBe(1);
      await storage.threads.update(thread.thread_id, { metadata: { tag: { nested: true } } });
      expect(await storage.threads.count({ metadata: { tag: "t1" } })).toBe(0);
      expect(await storage.threads.count({ metadata: { tag: { nested: true } } })).toBe(1);
      expect(await storage.threads.delete(thread.thread_id)).toBe(true);
      expect(await storage.threads.delete(thread.thread_id)).toBe(false);
      expect(await storage.threads.get(thread.thread_id)).toBeUndefined();
      for (const filter of [{}, { status: "busy" as const }, { metadata: { owner: "b" } }]) {
        expect(await storage.threads.count(filter)).toBe(0);
        expect(await storage.threads.search(search({ ...filter, sort_by: "updated_at" }))).toEqual({
          items: [],
          total: 0,
        });
      }
    });

    it("serialises concurrent metadata merges without losing any", async () => {
      const thread = await storage.threads.create({});
      await Promise.all(
        Array.from({ length: 20 }, (_, i) => storage.threads.update(thread.thread_id, { metadata: { [`k${i}`]: i } })),
      );
      const merged = await storage.threads.get(thread.thread_id);
      expect(Object.keys(merged?.metadata ?? {})).toHaveLength(20);
      expect(await storage.threads.count({ metadata: { k19: 19, k0: 0 } })).toBe(1);
    });

    it("updates or deletes a thread only while it is unchanged since it was read, when asked to", async () => {
      const created = await storage.threads.create({ ttl: { strategy: "delete", ttl: 5 } });
      const read = (await storage.threads.get(created.thread_id)) as Thread;
      await storage.threads.update(created.thread_id, { metadata: { touched: true } });
      expect(await storage.threads.updateIfUnchanged(read, { ttl_applied: true })).toBeUndefined();
      expect(await storage.threads.deleteIfUnchanged(read)).toBe(false);
      const current = (await storage.threads.get(created.thread_id)) as Thread;
      expect(current.metadata).toEqual({ touched: true });
      expect(current.ttl?.expires_at).not.toBeNull();

      const applied = await storage.threads.updateIfUnchanged(current, { ttl_applied: true });
      expect(applied?.ttl?.expires_at).toBeNull();
      expect(await storage.threads.get(created.thread_id)).toEqual(applied);
      expect(await storage.threads.deleteIfUnchanged(applied as Thread)).toBe(true);
      expect(await storage.threads.get(created.thread_id)).toBeUndefined();
      expect(await storage.threads.deleteIfUnchanged(applied as Thread)).toBe(false);
    });

    it("lists threads whose TTL ran out, soonest first, until a write or the sweep moves them", async () => {
      const at = (minutes: number) => new Date(Date.now() + minutes * 60_000);
      const later = await storage.threads.create({ ttl: { strategy: "delete", ttl: 20 } });
      const sooner = await storage.threads.create({ ttl: { strategy: "keep_latest", ttl: 10 } });
      const never = await storage.threads.create({});
      const mine = (ids: string[]) => ids.filter((id) => [later, sooner, never].some((t) => t.thread_id === id));
      expect(mine(await storage.threads.expired(at(5), 1000))).toEqual([]);
      expect(mine(await storage.threads.expired(at(15), 1000))).toEqual([sooner.thread_id]);
      expect(mine(await storage.threads.expired(at(25), 1000))).toEqual([sooner.thread_id, later.thread_id]);

      await storage.threads.update(sooner.thread_id, { ttl_applied: true });
      const applied = await storage.threads.get(sooner.thread_id);
      expect(applied?.ttl?.expires_at).toBeNull();
      expect(applied?.updated_at).toBe(sooner.updated_at);
      expect(mine(await storage.threads.expired(at(25), 1000))).toEqual([later.thread_id]);

      await storage.threads.update(later.thread_id, { ttl: null });
      expect(await storage.threads.get(later.thread_id)).not.toHaveProperty("ttl");
      await storage.threads.update(sooner.thread_id, { status: "busy" });
      expect(mine(await storage.threads.expired(at(25), 1000))).toEqual([sooner.thread_id]);
      await storage.threads.delete(sooner.thread_id);
      expect(mine(await storage.threads.expired(at(25), 1000))).toEqual([]);
    });
  });
}
