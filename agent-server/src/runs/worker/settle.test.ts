import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createLogger } from "@agentplane/common";
import { v7 as uuidv7 } from "uuid";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../../testing/redis.ts";
import { loadConfig } from "../../config.ts";
import type { ServerContext } from "../../context.ts";
import { fixtureConfig } from "../../graphs/testing/server.ts";
import { createRedisStorage } from "../../storage/redis.ts";
import { echoGraphRegistry } from "../../storage/testing/api-server.ts";
import type { Storage } from "../../storage/types.ts";
import { END_EVENT } from "../../stream/event-log.ts";
import { RunEventWriter } from "../../stream/writer.ts";
import { ThreadService } from "../../threads/service.ts";
import { createRedisRunBackend, type RunBackend } from "../queue/backend.ts";
import type { ExpiredRun } from "../queue/store.ts";
import { newRun } from "../queue/testing/contract.ts";
import type { Run } from "../schemas.ts";
import { waitUntil } from "../testing/wait.ts";
import type { ExecutionResult } from "./execute.ts";
import { outcomeJson, settleAbandoned, settleCancelledPending, settleRun } from "./settle.ts";

let storage: Storage;
let backend: RunBackend;
let ctx: ServerContext;
let threads: ThreadService;

beforeEach(async () => {
  const prefix = uniquePrefix("settle");
  storage = await createRedisStorage({ url: testRedisUrl(), prefix });
  backend = await createRedisRunBackend({ url: testRedisUrl(), prefix: `${prefix}runs:` });
  ctx = {
    // The webhook receivers listen on loopback, which webhooks may reach only when allowed.
    config: loadConfig(["dev", "--config", fixtureConfig], { WEBHOOK_ALLOWED_HOSTS: "127.0.0.1" }),
    storage,
    graphs: echoGraphRegistry(storage),
    logger: createLogger("settle-test", "silent"),
  };
  threads = new ThreadService(ctx);
});
afterEach(async () => {
  await backend.close();
  await storage.close();
});

const LEASE = 60_000;
const done = (values: unknown, next: string[] = []): ExecutionResult => ({
  kind: "done",
  values,
  next,
  interrupts: {},
});

/** A run of the `agent` graph on a new thread, claimed by this process (attempt 1), as a worker holds it. */
async function claimedRun(over: Partial<Run["kwargs"]> = {}): Promise<Run> {
  const thread = await storage.threads.create({});
  const run = newRun(uuidv7(), thread.thread_id, { config: { configurable: { graph_id: "agent" } }, ...over });
  const created = await backend.store.enqueue(run, { startAt: Date.now(), rejectIfBusy: false, claimLeaseMs: LEASE });
  expect(created.outcome).toBe("claimed");
  return run;
}

/** A run whose worker died (attempt 1): its lease expired and the sweep handed it back or gave it up. */
async function abandoned(maxAttempts: number, over: Partial<Run["kwargs"]> = {}) {
  const thread = await storage.threads.create({});
  const run = newRun(uuidv7(), thread.thread_id, { config: { configurable: { graph_id: "agent" } }, ...over });
  await backend.store.enqueue(run, { startAt: Date.now(), rejectIfBusy: false, claimLeaseMs: 1 });
  let expired: ExpiredRun[] = [];
  await waitUntil(async () => {
    expired = await backend.store.sweepExpired(maxAttempts);
    return expired.length > 0;
  }, "the lease expires");
  return { run, outcome: expired[0]!.outcome };
}

const settle = (run: Run, result: ExecutionResult, writer = new RunEventWriter(backend.events, run.run_id)) =>
  settleRun(ctx, backend, threads, run, { result, attempt: 1, startedAt: new Date().toISOString() }, writer);

/** Runs the echo graph once on the thread as run `runId` (its checkpoints carry the run id, as the worker's do). */
async function execute(threadId: string, runId: string, topic: string) {
  const graph = await ctx.graphs.get("agent");
  return graph.invoke({ topic }, { configurable: { thread_id: threadId }, metadata: { run_id: runId } });
}

const events = async (runId: string) =>
  (await backend.events.range(runId, -1, 100)).map(({ event, data }) => [event, JSON.parse(data)]);

describe("settleRun", () => {
  it("success: thread idle with the values, run success, events then the closing outcome", async () => {
    const run = await claimedRun();
    const writer = new RunEventWriter(backend.events, run.run_id);
    writer.push("values", { topic: "a" });
    const outcome = await settle(run, done({ topic: "a" }), writer);
    expect(outcome).toEqual({ status: "success", values: { topic: "a" } });
    expect((await backend.store.get(run.run_id))?.status).toBe("success");
    expect(await storage.threads.get(run.thread_id)).toMatchObject({
      status: "idle",
      values: { topic: "a" },
      interrupts: {},
    });
    expect(await events(run.run_id)).toEqual([
      ["values", { topic: "a" }],
      [END_EVENT, { status: "success", values: { topic: "a" } }],
    ]);
    expect((await backend.store.claim(LEASE)).claimed).toBeUndefined();
  });

  it("stopped before a node (interrupt): the run succeeds, the thread is interrupted with its interrupts", async () => {
    const run = await claimedRun();
    const interrupts = { task1: [{ id: "i1", value: "approve?" }] };
    const result: ExecutionResult = { kind: "done", values: { topic: "a" }, next: ["respond"], interrupts };
    expect(await settle(run, result)).toEqual({ status: "success", values: { topic: "a" } });
    expect(await storage.threads.get(run.thread_id)).toMatchObject({ status: "interrupted", interrupts });
  });

  it("failed: the error is logged before the end, run and thread in error, values kept", async () => {
    const run = await claimedRun();
    const error = { error: "ValueError", message: "boom" };
    const outcome = await settle(run, { kind: "failed", error, values: { topic: "half" } });
    expect(outcome).toEqual({ status: "error", values: { topic: "half" }, error });
    expect(JSON.parse(String(outcomeJson(outcome!)))).toEqual({ __error__: error });
    expect((await backend.store.get(run.run_id))?.status).toBe("error");
    expect(await storage.threads.get(run.thread_id)).toMatchObject({ status: "error", values: { topic: "half" } });
    expect(await events(run.run_id)).toEqual([
      ["error", error],
      [END_EVENT, outcome],
    ]);
  });

  it("interrupted with a run queued behind: the thread stays busy and the next run becomes claimable", async () => {
    const run = await claimedRun();
    const next = newRun("next", run.thread_id);
    await backend.store.enqueue(next, { startAt: Date.now(), rejectIfBusy: false });
    const outcome = await settle(run, { kind: "cancelled", reason: "interrupt", values: undefined });
    expect(outcome).toEqual({ status: "interrupted", values: null });
    expect((await backend.store.get(run.run_id))?.status).toBe("interrupted");
    // No values: the thread keeps what it had.
    expect(await storage.threads.get(run.thread_id)).toMatchObject({ status: "busy", values: null });
    expect((await backend.store.claim(LEASE)).claimed?.run.run_id).toBe("next");
  });

  it("rolled back: the run's checkpoints and record go, the thread is back at its state before the run", async () => {
    const run = await claimedRun();
    await execute(run.thread_id, "earlier", "a");
    await execute(run.thread_id, run.run_id, "b");
    const outcome = await settle(run, { kind: "cancelled", reason: "rollback", values: { topic: "b" } });
    const before = { topic: "a", reply: "about a" };
    expect(outcome).toEqual({ status: "deleted", values: before });
    expect(await backend.store.get(run.run_id)).toBeUndefined();
    expect(await storage.threads.get(run.thread_id)).toMatchObject({ status: "idle", values: before });
    const graph = await ctx.graphs.get("agent");
    expect((await graph.getState({ configurable: { thread_id: run.thread_id } })).values).toEqual(before);
    expect((await backend.events.last(run.run_id))?.data).toBe(JSON.stringify(outcome));
  });

  it("rolled back when the run wrote the thread's only checkpoints: the thread's values are cleared", async () => {
    const run = await claimedRun();
    await storage.threads.update(run.thread_id, { values: { topic: "b" } });
    await execute(run.thread_id, run.run_id, "b");
    expect(await settle(run, { kind: "cancelled", reason: "rollback", values: { topic: "b" } })).toEqual({
      status: "deleted",
      values: null,
    });
    expect(await storage.threads.get(run.thread_id)).toMatchObject({ status: "idle", values: null });
  });

  it("the lease was lost: undefined, the run and its thread left to the new holder", async () => {
    const { run } = await abandoned(3);
    expect((await backend.store.claim(LEASE)).claimed?.attempt).toBe(2);
    expect(await settle(run, done({ topic: "a" }))).toBeUndefined();
    expect((await backend.store.get(run.run_id))?.status).toBe("running");
    expect(await backend.events.last(run.run_id)).toBeUndefined();
    // Fenced: the stale worker's values and status never reach the thread.
    expect(await storage.threads.get(run.thread_id)).toMatchObject({ values: null, status: "idle" });
  });

  it("a temporary thread: deleted with its checkpoints once the run is settled", async () => {
    const run = await claimedRun({ temporary: true });
    await execute(run.thread_id, run.run_id, "a");
    expect(await settle(run, done({ topic: "a" }))).toEqual({ status: "success", values: { topic: "a" } });
    expect(await storage.threads.get(run.thread_id)).toBeUndefined();
    expect(await storage.checkpointer.getTuple({ configurable: { thread_id: run.thread_id } })).toBeUndefined();
  });

  it("the thread was deleted while the run executed: the checkpoints the run wrote since go too", async () => {
    const run = await claimedRun();
    await execute(run.thread_id, run.run_id, "a");
    await storage.threads.delete(run.thread_id);
    expect(await settle(run, done({ topic: "a" }))).toEqual({ status: "success", values: { topic: "a" } });
    expect(await storage.checkpointer.getTuple({ configurable: { thread_id: run.thread_id } })).toBeUndefined();
    expect(await storage.threads.get(run.thread_id)).toBeUndefined();
  });

  describe("webhook", () => {
    let server: Server;
    let received: { path?: string; body: any }[];
    beforeEach(async () => {
      received = [];
      server = createServer((req: IncomingMessage, res) => {
        let body = "";
        req.on("data", (chunk) => {
          body += chunk;
        });
        req.on("end", () => {
          received.push({ path: req.url, body: JSON.parse(body) });
          res.end();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    });
    afterEach(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const url = () => `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;

    it("is called with the finished run, its times, values and error", async () => {
      const run = await claimedRun({ webhook: url() });
      const error = { error: "ValueError", message: "boom" };
      await settle(run, { kind: "failed", error, values: { topic: "a" } });
      await waitUntil(async () => received.length > 0, "the webhook is called");
      expect(received[0]).toMatchObject({
        path: "/hook",
        body: {
          run_id: run.run_id,
          thread_id: run.thread_id,
          status: "error",
          values: { topic: "a" },
          error: "boom",
          run_started_at: expect.any(String),
          run_ended_at: expect.any(String),
          webhook_sent_at: expect.any(String),
        },
      });
    });

    it("is not called for a rolled-back run", async () => {
      const run = await claimedRun({ webhook: url() });
      const other = await claimedRun({ webhook: url() });
      await settle(run, { kind: "cancelled", reason: "rollback", values: null });
      // The later run's call proves the earlier one had its chance to call first.
      await settle(other, done({ topic: "a" }));
      await waitUntil(async () => received.length > 0, "the second run's webhook is called");
      expect(received.map(({ body }) => body.run_id)).toEqual([other.run_id]);
    });
  });
});

describe("settleAbandoned", () => {
  it("out of attempts: an error event and outcome, the thread in error", async () => {
    const { run, outcome } = await abandoned(1);
    expect(outcome).toBe("error");
    await settleAbandoned(ctx, backend, threads, { runId: run.run_id, outcome: "error" }, 1);
    const error = {
      error: "RunAttemptsExceeded",
      message: `Run ${run.run_id} was abandoned 1 times: its worker stopped (crashed or lost Redis) before finishing`,
    };
    expect(await events(run.run_id)).toEqual([
      ["error", error],
      [END_EVENT, { status: "error", values: null, error }],
    ]);
    expect((await storage.threads.get(run.thread_id))?.status).toBe("error");
  });

  it("interrupted while being cancelled: the outcome closes the log, the thread idle", async () => {
    const thread = await storage.threads.create({});
    const run = newRun(uuidv7(), thread.thread_id);
    await backend.store.enqueue(run, { startAt: Date.now(), rejectIfBusy: false, claimLeaseMs: 1 });
    await backend.store.cancel(run.run_id, "interrupt");
    await waitUntil(async () => (await backend.store.sweepExpired(3)).length > 0, "the lease expires");
    await settleAbandoned(ctx, backend, threads, { runId: run.run_id, outcome: "interrupted" }, 3);
    expect(await events(run.run_id)).toEqual([[END_EVENT, { status: "interrupted", values: null }]]);
    expect((await storage.threads.get(run.thread_id))?.status).toBe("idle");
  });

  it("rolled back while its worker was dead: its checkpoints and record go, the log closes deleted", async () => {
    const thread = await storage.threads.create({});
    const run = newRun(uuidv7(), thread.thread_id, { config: { configurable: { graph_id: "agent" } } });
    await backend.store.enqueue(run, { startAt: Date.now(), rejectIfBusy: false, claimLeaseMs: 1 });
    await execute(thread.thread_id, run.run_id, "a");
    await backend.store.cancel(run.run_id, "rollback");
    let expired: ExpiredRun[] = [];
    await waitUntil(async () => {
      expired = await backend.store.sweepExpired(3);
      return expired.length > 0;
    }, "the lease expires");
    expect(expired[0]?.outcome).toBe("deleted");
    await settleAbandoned(ctx, backend, threads, expired[0] as ExpiredRun, 3);
    expect(await storage.checkpointer.getTuple({ configurable: { thread_id: thread.thread_id } })).toBeUndefined();
    expect(await backend.store.get(run.run_id)).toBeUndefined();
    expect(await events(run.run_id)).toEqual([[END_EVENT, { status: "deleted", values: null }]]);
    expect((await storage.threads.get(thread.thread_id))?.status).toBe("idle");
  });

  it("a temporary thread is deleted", async () => {
    const { run } = await abandoned(1, { temporary: true });
    await settleAbandoned(ctx, backend, threads, { runId: run.run_id, outcome: "error" }, 1);
    expect(await storage.threads.get(run.thread_id)).toBeUndefined();
  });

  it("a run that is gone: nothing to do", async () => {
    await settleAbandoned(ctx, backend, threads, { runId: "gone", outcome: "error" }, 1);
    expect(await backend.events.last("gone")).toBeUndefined();
  });
});

describe("settleCancelledPending", () => {
  it("closes the log of a pending run cancelled before any worker took it", async () => {
    await settleCancelledPending(backend, "kept", false);
    await settleCancelledPending(backend, "gone", true);
    expect(await events("kept")).toEqual([[END_EVENT, { status: "interrupted", values: null }]]);
    expect(await events("gone")).toEqual([[END_EVENT, { status: "deleted", values: null }]]);
  });
});

describe("outcomeJson", () => {
  it("answers the values, their text when read as text, null for none, or the error", () => {
    expect(outcomeJson({ status: "success", values: { a: 1 } })).toBe('{"a":1}');
    const valuesJson = [Buffer.from('{"b":'), Buffer.from("[2]}")];
    expect(outcomeJson({ status: "success", values: undefined, valuesJson })).toBe(valuesJson);
    expect(outcomeJson({ status: "interrupted", values: undefined })).toBe("null");
    const error = { error: "E", message: "m" };
    expect(JSON.parse(String(outcomeJson({ status: "error", values: { a: 1 }, error })))).toEqual({ __error__: error });
  });
});
