import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { type ServerProcess, spawnServer } from "../runs/testing/process.ts";

/**
 * Custom auth on Redis with two replicas, through the official SDK: `a` has no workers, so the
 * runs created there execute on `b`. Alice owns a thread with a finished run, a thread with a
 * pending run, an assistant, a cron and a store item; Bob, authenticated, tries every endpoint
 * group on them (on either replica) and gets the status the reference gives, and nothing of
 * Alice's ever appears in what he gets back.
 */
const project = new URL("./testing/project/langgraph.json", import.meta.url).pathname;

const clientOf = (server: ServerProcess, token: string) =>
  new Client({
    apiUrl: server.url,
    defaultHeaders: { authorization: `Bearer ${token}` },
    callerOptions: { maxRetries: 0 },
  });

/** What an attempt got: the status (200 for a resolved SDK call) and what came back. */
interface Outcome {
  status: number;
  body: unknown;
}

async function attempt(call: () => Promise<unknown>): Promise<Outcome> {
  try {
    const body = await call();
    return { status: 200, body };
  } catch (error) {
    const status = (error as { status?: number }).status;
    if (typeof status !== "number") throw error;
    return { status, body: (error as Error).message };
  }
}

/** Every chunk of an SDK stream (an HTTP error surfaces as a throw). */
async function drain(stream: AsyncIterable<unknown>): Promise<unknown[]> {
  const chunks: unknown[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** A plain HTTP request as Bob: status and body text. */
async function raw(server: ServerProcess, path: string, init: RequestInit & { token?: string } = {}): Promise<Outcome> {
  const { token = "token-bob", ...rest } = init;
  const headers = new Headers(rest.headers);
  if (token) headers.set("authorization", `Bearer ${token}`);
  if (rest.body) headers.set("content-type", "application/json");
  const controller = new AbortController();
  const response = await fetch(`${server.url}${path}`, { ...rest, headers, signal: controller.signal });
  // A stream that opened would never end: what arrives in its first moment is enough to check for leaks.
  const timer = setTimeout(() => controller.abort(), 1500);
  const body = await response.text().catch(() => "<stream cut>");
  clearTimeout(timer);
  return { status: response.status, body };
}

describe("custom auth on two replicas", () => {
  let a: ServerProcess;
  let b: ServerProcess;
  const alice = { a: undefined as unknown as Client, b: undefined as unknown as Client };
  const bob = { a: undefined as unknown as Client, b: undefined as unknown as Client };
  const own = {
    thread: "",
    busyThread: "",
    run: "",
    pendingRun: "",
    assistant: "",
    cron: "",
  };

  beforeAll(async () => {
    const prefix = uniquePrefix("custom-auth");
    // One after the other: two compiling at once on a busy machine can miss the start deadline.
    a = await spawnServer(testRedisUrl(), prefix, { N_WORKERS: "0" }, project);
    b = await spawnServer(testRedisUrl(), prefix, {}, project);
    alice.a = clientOf(a, "token-alice");
    alice.b = clientOf(b, "token-alice");
    bob.a = clientOf(a, "token-bob");
    bob.b = clientOf(b, "token-bob");

    const thread = await alice.a.threads.create({ metadata: { topic: "secret-alpha" } });
    own.thread = thread.thread_id;
    const run = await alice.a.runs.create(own.thread, "whoami", { input: { input: "hi" } });
    own.run = run.run_id;
    await alice.a.runs.join(own.thread, own.run);
    const busy = await alice.a.threads.create({ metadata: { topic: "secret-beta" } });
    own.busyThread = busy.thread_id;
    own.pendingRun = (await alice.a.runs.create(own.busyThread, "whoami", { input: {}, afterSeconds: 3600 })).run_id;
    own.assistant = (
      await alice.a.assistants.create({ graphId: "whoami", name: "alice-bot", metadata: { k: "alpha" } })
    ).assistant_id;
    own.cron = (await alice.a.crons.createForThread(own.thread, "whoami", { schedule: "0 0 1 1 *" })).cron_id;
    await alice.a.store.putItem(["notes"], "k1", { text: "secret-gamma" });
  }, 120_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it("authenticates every API request: HTTPException keeps its status and headers, any other throw is a 401", async () => {
    const none = await fetch(`${a.url}/threads/search`, { method: "POST", body: "{}" });
    expect(none.status).toBe(401);
    const bad = await fetch(`${a.url}/threads/search`, {
      method: "POST",
      body: "{}",
      headers: { authorization: "Bearer nope" },
    });
    expect(bad.status).toBe(401);
    expect(bad.headers.get("www-authenticate")).toBe("Bearer");
    expect(await bad.json()).toEqual({ detail: "Invalid token" });
    const crash = await raw(a, "/threads/search", { method: "POST", body: "{}", token: "crash" });
    expect(crash.status).toBe(401);
    // Health, server info and the API reference need no user.
    for (const path of ["/ok", "/info", "/docs", "/openapi.json"]) {
      expect((await fetch(`${a.url}${path}`)).status, path).toBe(200);
    }
  });

  it("runs see the user that created them, executed by a worker on the other replica", async () => {
    const state = await alice.a.threads.getState<{ user: string; permissions: string[]; team: string }>(own.thread);
    expect(state.values).toMatchObject({ user: "alice/alice", permissions: ["threads:write"], team: "red" });
    const run = await alice.b.runs.get(own.thread, own.run);
    expect(run.metadata).toMatchObject({ owner: "alice" });
    // The run holds the user authenticate returned, never the credentials it was given.
    expect(JSON.stringify(run)).toContain('"langgraph_auth_user_id":"alice"');
    expect(JSON.stringify(run)).not.toContain("token-alice");
    // Bob's own run on his own new thread sees Bob.
    const mine = await bob.b.threads.create();
    expect(mine.metadata).toEqual({ owner: "bob" });
    const result = await bob.a.runs.wait(mine.thread_id, "whoami", { input: {} });
    expect(result).toMatchObject({ user: "bob/bob", permissions: [], team: "blue" });
  });

  it("gives Bob the reference's status on 50 attempts at Alice's resources, and none of her data", async () => {
    const { thread, busyThread, run, pendingRun, assistant, cron } = own;
    const post = (body: unknown) => ({ method: "POST", body: JSON.stringify(body) });
    const attempts: [string, number, () => Promise<Outcome>][] = [
      // threads
      ["get thread", 404, () => attempt(() => bob.b.threads.get(thread))],
      ["get thread (same replica)", 404, () => attempt(() => bob.a.threads.get(thread))],
      ["patch thread", 404, () => attempt(() => bob.b.threads.update(thread, { metadata: { owner: "bob" } }))],
      ["delete thread", 403, () => attempt(() => bob.b.threads.delete(thread))],
      ["copy thread", 404, () => attempt(() => bob.b.threads.copy(thread))],
      ["get state", 404, () => attempt(() => bob.b.threads.getState(thread))],
      ["get state at checkpoint", 404, () => attempt(() => bob.b.threads.getState(thread, "1ef0000"))],
      ["history", 404, () => attempt(() => bob.b.threads.getHistory(thread))],
      ["update state", 404, () => attempt(() => bob.b.threads.updateState(thread, { values: { input: "x" } }))],
      ["create with her id", 409, () => attempt(() => bob.b.threads.create({ threadId: thread }))],
      [
        "create with her id, do_nothing",
        409,
        () => attempt(() => bob.b.threads.create({ threadId: thread, ifExists: "do_nothing" })),
      ],
      ["search", 200, () => attempt(() => bob.b.threads.search({ limit: 100 }))],
      ["search her metadata", 200, () => attempt(() => bob.b.threads.search({ metadata: { topic: "secret-alpha" } }))],
      ["search her owner", 200, () => attempt(() => bob.b.threads.search({ metadata: { owner: "alice" } }))],
      ["search her ids", 200, () => attempt(() => bob.b.threads.search({ ids: [thread, busyThread] }))],
      ["count her owner", 200, () => attempt(() => bob.b.threads.count({ metadata: { owner: "alice" } }))],
      ["prune", 403, () => raw(b, "/threads/prune", post({ thread_ids: [thread], strategy: "delete" }))],
      // runs
      ["list runs", 404, () => attempt(() => bob.b.runs.list(thread))],
      ["get run", 404, () => attempt(() => bob.b.runs.get(thread, run))],
      ["create run", 404, () => attempt(() => bob.b.runs.create(thread, "whoami", { input: {} }))],
      [
        "create run, if_not_exists create",
        404,
        () => attempt(() => bob.b.runs.create(thread, "whoami", { input: {}, ifNotExists: "create" })),
      ],
      ["wait run", 404, () => attempt(() => bob.a.runs.wait(thread, "whoami", { input: {} }))],
      ["stream run", 404, () => attempt(() => drain(bob.b.runs.stream(thread, "whoami", { input: {} })))],
      ["join run", 404, () => attempt(() => bob.b.runs.join(thread, run))],
      ["join stream", 404, () => attempt(() => drain(bob.b.runs.joinStream(thread, run)))],
      ["join stream, stateless path", 404, () => raw(b, `/runs/${run}/stream`)],
      ["cancel run", 404, () => attempt(() => bob.b.runs.cancel(busyThread, pendingRun))],
      ["cancel runs by id", 404, () => raw(b, "/runs/cancel", post({ thread_id: busyThread, run_ids: [pendingRun] }))],
      ["cancel all pending", 204, () => raw(b, "/runs/cancel", post({ status: "pending" }))],
      ["delete run", 403, () => attempt(() => bob.b.runs.delete(thread, run))],
      ["thread stream", 404, () => raw(b, `/threads/${thread}/stream`)],
      [
        "protocol command",
        404,
        () => raw(b, `/threads/${thread}/commands`, post({ id: 1, method: "state.get", params: {} })),
      ],
      ["protocol events", 404, () => raw(b, `/threads/${thread}/stream/events`, post({ channels: ["values"] }))],
      // assistants
      ["get assistant", 404, () => attempt(() => bob.b.assistants.get(assistant))],
      ["patch assistant", 404, () => attempt(() => bob.b.assistants.update(assistant, { name: "mine" }))],
      ["delete assistant", 404, () => attempt(() => bob.b.assistants.delete(assistant))],
      ["assistant versions", 404, () => attempt(() => bob.b.assistants.getVersions(assistant))],
      ["assistant latest", 404, () => attempt(() => bob.b.assistants.setLatest(assistant, 1))],
      ["assistant graph", 404, () => attempt(() => bob.b.assistants.getGraph(assistant))],
      ["assistant schemas", 404, () => attempt(() => bob.b.assistants.getSchemas(assistant))],
      ["search assistants", 200, () => attempt(() => bob.b.assistants.search({ limit: 100 }))],
      ["count assistants", 200, () => attempt(() => bob.b.assistants.count({ metadata: { k: "alpha" } }))],
      [
        "create assistant with her id",
        409,
        () =>
          attempt(() => bob.b.assistants.create({ graphId: "whoami", assistantId: assistant, ifExists: "do_nothing" })),
      ],
      // crons
      ["search crons", 200, () => attempt(() => bob.b.crons.search({ limit: 100 }))],
      ["count crons", 200, () => attempt(() => bob.b.crons.count({}))],
      ["patch cron", 404, () => attempt(() => bob.b.crons.update(cron, { schedule: "* * * * *" }))],
      ["delete cron", 404, () => attempt(() => bob.b.crons.delete(cron))],
      [
        "cron on her thread",
        404,
        () => attempt(() => bob.b.crons.createForThread(thread, "whoami", { schedule: "0 0 1 1 *" })),
      ],
      // store
      ["store get", 200, () => attempt(() => bob.b.store.getItem(["notes"], "k1"))],
      ["store get her namespace", 200, () => attempt(() => bob.b.store.getItem(["alice", "notes"], "k1"))],
      ["store search", 200, () => attempt(() => bob.b.store.searchItems([]))],
      ["store search her namespace", 200, () => attempt(() => bob.b.store.searchItems(["alice"]))],
      ["store namespaces", 200, () => attempt(() => bob.b.store.listNamespaces())],
      ["store delete", 200, () => attempt(() => bob.b.store.deleteItem(["notes"], "k1"))],
      // A2A
      [
        "a2a task",
        200,
        () => raw(b, "/a2a/whoami", post({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: run } })),
      ],
    ];
    expect(attempts.length).toBeGreaterThanOrEqual(40);
    // Her data never shows; her ids only in refusals that echo the id asked for (as for an unknown one).
    const data = ["secret-alpha", "secret-beta", "secret-gamma", "alice-bot", "alpha"];
    const ids = [thread, busyThread, run, pendingRun, assistant, cron];
    const seen: Record<string, number> = {};
    const leaks: string[] = [];
    for (const [name, , call] of attempts) {
      const { status, body } = await call();
      seen[name] = status;
      const text = JSON.stringify(body) ?? "";
      // A JSON-RPC error (A2A) is a refusal too, sent with 200.
      const refused = status >= 400 || /\\?"error\\?"/.test(text);
      for (const secret of refused ? data : [...data, ...ids]) {
        if (text.includes(secret)) leaks.push(`${name}: ${secret}`);
      }
    }
    expect(seen).toEqual(Object.fromEntries(attempts.map(([name, status]) => [name, status])));
    expect(leaks).toEqual([]);

    // And nothing of Alice's changed.
    expect((await alice.b.threads.get(thread)).metadata).toMatchObject({ topic: "secret-alpha", owner: "alice" });
    expect((await alice.b.runs.get(busyThread, pendingRun)).status).toBe("pending");
    expect((await alice.b.assistants.get(assistant)).name).toBe("alice-bot");
    expect((await alice.b.assistants.getVersions(assistant)).map((v) => [v.version, v.metadata?.owner])).toEqual([
      [1, "alice"],
    ]);
    expect((await alice.b.crons.search({})).map((c) => c.cron_id)).toEqual([cron]);
    expect((await alice.b.store.getItem(["notes"], "k1"))?.value).toEqual({ text: "secret-gamma" });
    expect(await alice.b.threads.count({})).toBe(2);
  });

  it("filters searches and counts through the indexes: each user sees exactly their own", async () => {
    const created = await Promise.all(
      Array.from({ length: 6 }, (_, i) => (i % 2 ? alice.a : bob.b).threads.create({ metadata: { batch: "x" } })),
    );
    const aliceIds = created.filter((_, i) => i % 2).map((t) => t.thread_id);
    const found = await alice.b.threads.search({ metadata: { batch: "x" }, limit: 10 });
    expect(found.map((t) => t.thread_id).sort()).toEqual(aliceIds.sort());
    expect(await bob.a.threads.count({ metadata: { batch: "x" } })).toBe(3);
    // Alice's store item is under her namespace, Bob's under his: each lists only their own.
    await bob.b.store.putItem(["notes"], "k1", { text: "bob's" });
    expect((await bob.a.store.searchItems(["notes"])).items.map((item) => item.namespace)).toEqual([["bob", "notes"]]);
    expect((await alice.a.store.getItem(["notes"], "k1"))?.value).toEqual({ text: "secret-gamma" });
  });
});
