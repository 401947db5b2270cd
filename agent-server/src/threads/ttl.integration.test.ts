import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl } from "../../../testing/redis.ts";
import { type RunTestServer, startRunServer, ttlFixtureConfig } from "../runs/testing/server.ts";
import { waitUntil } from "../runs/testing/wait.ts";
import type { Thread } from "../storage/types.ts";
import { ThreadService } from "./service.ts";
import { ThreadTtlSweeper } from "./ttl.ts";

/**
 * Thread TTLs on both storages: the deployment default from `checkpointer.ttl` applied by the
 * server's own sweeper, and the rules (activity, busy threads, strategies) through a sweep at a
 * chosen time, on threads whose one-hour TTL the background sweeper never reaches.
 */

const hello = (content: string) => ({ messages: [{ role: "human", content }] });
const TWO_HOURS_LATER = () => new Date(Date.now() + 2 * 3_600_000);

describe.each([
  ["Redis", () => testRedisUrl()],
  ["in-memory", () => undefined],
])("thread TTLs on %s storage", (_kind, redisUrl) => {
  let server: RunTestServer;
  let sweeper: ThreadTtlSweeper;

  beforeAll(async () => {
    server = await startRunServer(redisUrl(), { configPath: ttlFixtureConfig });
    const { ctx } = server.server;
    const threads = new ThreadService(ctx, {
      onDelete: (threadId) => server.runs.service().deleteThreadRuns(threadId),
    });
    sweeper = new ThreadTtlSweeper(ctx, threads);
  });
  afterAll(async () => {
    await server?.close();
  });

  async function getThread(threadId: string, query = ""): Promise<{ status: number; body: Thread }> {
    const res = await fetch(`${server.url}/threads/${threadId}${query}`);
    return { status: res.status, body: (await res.json()) as Thread };
  }

  const send = (method: string, path: string, body: unknown) =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("gives new threads the deployment's default TTL and deletes them, checkpoints and runs, once idle that long", async () => {
    const thread = await server.client.threads.create();
    expect(thread).not.toHaveProperty("ttl");
    const shown = await getThread(thread.thread_id, "?include=ttl");
    expect(shown.body.ttl).toEqual({
      strategy: "delete",
      ttl_minutes: 0.02,
      expires_at: new Date(Date.parse(shown.body.updated_at) + 1200).toISOString(),
    });
    const run = await server.client.runs.create(thread.thread_id, "agent", { input: hello("soon gone") });
    await server.client.runs.join(thread.thread_id, run.run_id);
    expect((await server.client.threads.getState(thread.thread_id)).values).toHaveProperty("messages");

    await waitUntil(async () => (await getThread(thread.thread_id)).status === 404, "the thread to expire", 10_000);
    const { checkpointer } = server.server.ctx.storage;
    expect(await checkpointer.getTuple({ configurable: { thread_id: thread.thread_id } })).toBeUndefined();
    expect(await server.server.ctx.storage.threads.search({ ...searchAll, ids: [thread.thread_id] })).toEqual({
      items: [],
      total: 0,
    });
    await expect(server.client.runs.get(thread.thread_id, run.run_id)).rejects.toThrow(/404/);
  });

  const searchAll = { limit: 10, offset: 0, sort_by: "created_at", sort_order: "desc" } as const;

  it("counts the TTL from the thread's latest write, and a patch sets or removes it", async () => {
    const thread = await server.client.threads.create({ ttl: 60 });
    const first = (await getThread(thread.thread_id, "?include=ttl")).body.ttl;
    expect(first).toMatchObject({ strategy: "delete", ttl_minutes: 60 });
    // A later write, on the millisecond clock the expiry is counted in.
    await waitUntil(async () => Date.now() > Date.parse(thread.updated_at), "the clock passes the thread's creation");
    await server.client.threads.update(thread.thread_id, { metadata: { touched: true } });
    const touched = (await getThread(thread.thread_id, "?include=ttl")).body;
    expect(Date.parse(touched.ttl?.expires_at ?? "")).toBe(Date.parse(touched.updated_at) + 3_600_000);
    expect(Date.parse(touched.ttl?.expires_at ?? "")).toBeGreaterThan(Date.parse(first?.expires_at ?? ""));

    const patched = await send("PATCH", `/threads/${thread.thread_id}`, { ttl: { strategy: "keep_latest", ttl: 5 } });
    expect(patched.status).toBe(200);
    expect(await patched.json()).not.toHaveProperty("ttl");
    expect((await getThread(thread.thread_id, "?include=ttl")).body.ttl).toMatchObject({
      strategy: "keep_latest",
      ttl_minutes: 5,
    });

    expect((await send("PATCH", `/threads/${thread.thread_id}`, { ttl: null })).status).toBe(200);
    expect((await getThread(thread.thread_id, "?include=ttl")).body).not.toHaveProperty("ttl");
    await sweeper.sweep(TWO_HOURS_LATER());
    expect((await getThread(thread.thread_id)).status).toBe(200);
  });

  it("deletes an expired thread whole, and leaves a busy one until its run is done", async () => {
    const idle = await server.client.threads.create({ ttl: { ttl: 60, strategy: "delete" } });
    await server.client.runs.wait(idle.thread_id, "agent", { input: hello("bye") });
    const busy = await server.client.threads.create({ ttl: 60 });
    const run = await server.client.runs.create(busy.thread_id, "steps", {
      input: { steps: 1, delay_ms: 1500, label: "slow" },
    });
    await waitUntil(async () => (await getThread(busy.thread_id)).body.status === "busy", "the run to start");
    const before = (await getThread(busy.thread_id, "?include=ttl")).body.ttl?.expires_at;

    await sweeper.sweep(TWO_HOURS_LATER());
    expect((await getThread(idle.thread_id)).status).toBe(404);
    expect(await server.client.runs.list(idle.thread_id).catch((error: Error) => error.message)).toMatch(/404/);
    expect((await getThread(busy.thread_id)).status).toBe(200);

    await server.client.runs.join(busy.thread_id, run.run_id);
    const after = (await getThread(busy.thread_id, "?include=ttl")).body;
    expect(after.status).toBe("idle");
    expect(Date.parse(after.ttl?.expires_at ?? "")).toBeGreaterThan(Date.parse(before ?? ""));
  });

  it("counts each expired thread once when two replicas sweep at the same time, with either strategy", async () => {
    const create = (strategy: string) => server.client.threads.create({ ttl: { ttl: 60, strategy } } as never);
    const deleted = await Promise.all(Array.from({ length: 3 }, () => create("delete")));
    const pruned = await Promise.all(Array.from({ length: 3 }, () => create("keep_latest")));
    const later = TWO_HOURS_LATER();
    const due = await server.server.ctx.storage.threads.expired(later, 1000);
    const ours = [...deleted, ...pruned].map((thread) => thread.thread_id);
    expect(due).toEqual(expect.arrayContaining(ours));
    const [first, second] = await Promise.all([sweeper.sweep(later), sweeper.sweep(later)]);
    // This server's own sweeper may take other tests' threads (their TTLs are real-time short) meanwhile.
    expect((first ?? 0) + (second ?? 0)).toBeGreaterThanOrEqual(ours.length);
    expect((first ?? 0) + (second ?? 0)).toBeLessThanOrEqual(due.length);
    for (const thread of deleted) expect((await getThread(thread.thread_id)).status).toBe(404);
    for (const thread of pruned)
      expect((await getThread(thread.thread_id, "?include=ttl")).body.ttl?.expires_at).toBeNull();
  });

  it("gives threads that runs create the default TTL: kept stateless runs and if_not_exists", async () => {
    const kept = await send("POST", "/runs", { assistant_id: "agent", input: hello("keep"), on_completion: "keep" });
    const stateless = (await kept.json()) as { run_id: string; thread_id: string };
    await server.client.runs.join(stateless.thread_id, stateless.run_id);
    const threadId = crypto.randomUUID();
    const created = await send("POST", `/threads/${threadId}/runs/wait`, {
      assistant_id: "agent",
      input: hello("create"),
      if_not_exists: "create",
    });
    expect(created.status).toBe(200);
    // Checked right away: the fixture's default TTL is 1.2 s, and this server sweeps.
    for (const id of [stateless.thread_id, threadId]) {
      expect((await getThread(id, "?include=ttl")).body.ttl).toMatchObject({ strategy: "delete", ttl_minutes: 0.02 });
    }
  });

  it("keep_latest prunes all but the latest checkpoint and keeps the thread until its next write", async () => {
    const thread = await server.client.threads.create({ ttl: { ttl: 60, strategy: "keep_latest" } } as never);
    await server.client.runs.wait(thread.thread_id, "agent", { input: hello("one") });
    await server.client.runs.wait(thread.thread_id, "agent", { input: hello("two") });
    expect((await server.client.threads.getHistory(thread.thread_id, { limit: 100 })).length).toBeGreaterThan(1);
    const values = (await server.client.threads.getState(thread.thread_id)).values;

    expect(await sweeper.sweep(TWO_HOURS_LATER())).toBeGreaterThanOrEqual(1);
    expect(await server.client.threads.getHistory(thread.thread_id, { limit: 100 })).toHaveLength(1);
    expect((await server.client.threads.getState(thread.thread_id)).values).toEqual(values);
    const pruned = (await getThread(thread.thread_id, "?include=ttl")).body;
    expect(pruned.ttl).toEqual({ strategy: "keep_latest", ttl_minutes: 60, expires_at: null });
    expect(await server.server.ctx.storage.threads.expired(TWO_HOURS_LATER(), 1000)).not.toContain(thread.thread_id);

    await server.client.runs.wait(thread.thread_id, "agent", { input: hello("three") });
    const written = (await getThread(thread.thread_id, "?include=ttl")).body;
    expect(Date.parse(written.ttl?.expires_at ?? "")).toBe(Date.parse(written.updated_at) + 3_600_000);
  });

  it("answers a malformed TTL with 422 and keeps the thread as it was", async () => {
    const thread = await server.client.threads.create({ ttl: 60, metadata: { kept: 1 } });
    const stored = (await getThread(thread.thread_id, "?include=ttl")).body;
    for (const ttl of [{ ttl: -1 }, { ttl: 0 }, { ttl: 1e12 }, { ttl: "soon" }, { ttl: 5, strategy: "forever" }, 5]) {
      for (const [method, path] of [
        ["POST", "/threads"],
        ["PATCH", `/threads/${thread.thread_id}`],
      ] as const) {
        const res = await send(method, path, { ttl });
        expect(res.status, `${method} ${JSON.stringify(ttl)}`).toBe(422);
        const body = (await res.json()) as { detail: { loc: unknown[] }[] };
        expect(body.detail[0]?.loc).toEqual(expect.arrayContaining(["body", "ttl"]));
      }
    }
    expect((await send("GET", `/threads/${thread.thread_id}?include=everything`, undefined)).status).toBe(422);
    expect((await getThread(thread.thread_id, "?include=ttl")).body).toEqual(stored);
  });
});
