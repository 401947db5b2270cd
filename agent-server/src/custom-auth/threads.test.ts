import { createLogger } from "@agentplane/common";
import { Auth } from "@langchain/langgraph-sdk/auth";
import { beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../config.ts";
import type { ServerContext } from "../context.ts";
import { fixtureConfig } from "../graphs/testing/server.ts";
import { createMemoryStorage } from "../storage/memory.ts";
import { echoGraphRegistry } from "../storage/testing/api-server.ts";
import type { ThreadFilter, ThreadSearch } from "../storage/types.ts";
import { ThreadService } from "../threads/service.ts";
import { normalizeUser, type ProjectAuth, RequestAuth } from "./authorize.ts";

/** How the thread service hands auth filters to the store: as indexable metadata whenever it can. */
describe("ThreadService under custom auth", () => {
  let ctx: ServerContext;
  let threads: ThreadService;
  let queries: ThreadFilter[];

  const as = (identity: string, filter: (identity: string) => Record<string, unknown>) =>
    new RequestAuth(
      normalizeUser(identity),
      new Auth().on("*", ({ value, user }) => {
        if ("metadata" in value) value.metadata = { ...value.metadata, owner: user.identity };
        return filter(user.identity) as { owner: string };
      }) as unknown as ProjectAuth,
    );

  beforeEach(() => {
    const storage = createMemoryStorage();
    // Record what reaches the store, then answer as the store does.
    queries = [];
    const search = storage.threads.search.bind(storage.threads);
    const count = storage.threads.count.bind(storage.threads);
    storage.threads.search = (query: ThreadSearch) => {
      queries.push(query);
      return search(query);
    };
    storage.threads.count = (filter: ThreadFilter) => {
      queries.push(filter);
      return count(filter);
    };
    ctx = {
      config: loadConfig(["dev", "--config", fixtureConfig], {}),
      storage,
      graphs: echoGraphRegistry(storage),
      logger: createLogger("custom-auth", "silent"),
    };
    threads = new ThreadService(ctx);
  });

  const page = { limit: 10, offset: 0, sort_by: "created_at", sort_order: "desc" } as const;

  it("turns an owner filter into a metadata filter the indexes answer, with nothing left to scan", async () => {
    const alice = as("alice", (owner) => ({ owner }));
    await threads.create({ metadata: { kind: "chat" } }, alice);
    await threads.create(
      { metadata: { kind: "chat" } },
      as("bob", (owner) => ({ owner })),
    );
    const found = await threads.search({ ...page, metadata: { kind: "chat" } }, alice);
    expect(found.items.map((thread) => thread.metadata)).toEqual([{ kind: "chat", owner: "alice" }]);
    expect(
      await threads.count(
        {},
        as("alice", (owner) => ({ owner: { $eq: owner } })),
      ),
    ).toBe(1);
    expect(queries).toEqual([
      { ...page, metadata: { kind: "chat", owner: "alice" }, auth: undefined },
      { metadata: { owner: "alice" }, auth: undefined },
    ]);
  });

  it("does not query the store when the search contradicts the filter", async () => {
    const alice = as("alice", (owner) => ({ owner }));
    expect(await threads.search({ ...page, metadata: { owner: "bob" } }, alice)).toEqual({ items: [], total: 0 });
    expect(await threads.count({ metadata: { owner: "bob" } }, alice)).toBe(0);
    expect(queries).toEqual([]);
  });

  it("leaves $contains to a per-record check among the indexed candidates", async () => {
    const member = as("alice", (owner) => ({ owner, members: { $contains: owner } }));
    const created = await threads.create({ metadata: { members: ["alice", "carol"] } }, member);
    await threads.create({ metadata: { members: ["carol"] } }, member);
    const found = await threads.search(page, member);
    expect(found.items.map((thread) => thread.thread_id)).toEqual([created.thread_id]);
    expect(queries.at(-1)).toMatchObject({ metadata: { owner: "alice" }, auth: { members: { $contains: "alice" } } });
  });
});
