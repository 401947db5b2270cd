import { afterEach, beforeEach, expect, it } from "vitest";
import { END_EVENT } from "../../../stream/event-log.ts";
import type { CancelAction, Run } from "../../schemas.ts";
import { eventually, waitUntil } from "../../testing/wait.ts";
import type { RunBackend } from "../backend.ts";
import type { ClaimedRun } from "../store.ts";

export const newRun = (runId: string, threadId: string, over: Partial<Run["kwargs"]> = {}): Run => ({
  run_id: runId,
  thread_id: threadId,
  assistant_id: "a",
  created_at: new Date().toISOString(),
  updated_at: new Date().toISOString(),
  status: "pending",
  metadata: {},
  multitask_strategy: "enqueue",
  kwargs: { config: {}, stream_mode: ["values"], subgraphs: false, resumable: false, temporary: false, ...over },
});

const closing = { data: '{"status":"success"}', keepSeconds: 60 };
const LONG_LEASE = 60_000;

export interface RunBackendContractOptions {
  /** Leases of dead workers expire (several processes); a single process never loses a worker without settling its runs. */
  leasesExpire: boolean;
}

/**
 * The rules every run backend follows (the Redis one, the in-process one of `agent-server dev`),
 * registered as vitest tests. Each test gets a fresh, empty backend from `makeBackend`.
 */
export function runBackendContract(
  makeBackend: () => Promise<RunBackend>,
  { leasesExpire }: RunBackendContractOptions,
) {
  let backend: RunBackend;
  beforeEach(async () => {
    backend = await makeBackend();
  });
  afterEach(() => backend.close());

  const enqueue = (runId: string, threadId: string, { startAt = Date.now(), rejectIfBusy = false } = {}) =>
    backend.store.enqueue(newRun(runId, threadId), { startAt, rejectIfBusy }).then((result) => result.outcome);
  const claim = async (leaseMs = LONG_LEASE): Promise<ClaimedRun | undefined> =>
    (await backend.store.claim(leaseMs)).claimed;
  const ids = (runs: Run[]) => runs.map((run) => run.run_id);

  it("stores queued runs pending and lists a thread's runs newest first, by status, paged", async () => {
    const { store } = backend;
    for (const runId of ["r1", "r2", "r3"]) expect(await enqueue(runId, "T")).toBe("queued");
    await enqueue("u1", "U");
    expect(await store.get("r1")).toMatchObject({ run_id: "r1", thread_id: "T", status: "pending" });
    expect(await store.get("nope")).toBeUndefined();
    expect(await store.queued("T")).toBe(3);
    expect(ids(await store.list("T", { limit: 10, offset: 0 }))).toEqual(["r3", "r2", "r1"]);
    expect(ids(await store.list("T", { limit: 1, offset: 1 }))).toEqual(["r2"]);
    expect(ids(await store.inflight("T"))).toEqual(["r1", "r2", "r3"]);
    expect(ids(await store.allInflight())).toEqual(["r1", "r2", "r3", "u1"]);
    expect(await store.inflightCounts()).toEqual({ pending: 4, running: 0 });
    const r1 = await claim();
    expect(await store.inflightCounts()).toEqual({ pending: 3, running: 1 });
    await store.finish("r1", r1!.attempt, "success", closing);
    expect(ids(await store.list("T", { limit: 10, offset: 0, status: "success" }))).toEqual(["r1"]);
    expect(ids(await store.list("T", { limit: 1, offset: 1, status: "pending" }))).toEqual(["r2"]);
    expect(ids(await store.allInflight())).toEqual(["r2", "r3", "u1"]);
    expect(await store.inflightCounts()).toEqual({ pending: 3, running: 0 });
    expect(await store.list("nobody", { limit: 10, offset: 0 })).toEqual([]);
  });

  it("claims one run per thread at a time, in arrival order, threads in parallel; finishing frees the thread", async () => {
    const { store } = backend;
    await enqueue("a1", "A");
    await enqueue("a2", "A");
    await enqueue("b1", "B");
    const first = await claim();
    const second = await claim();
    expect([first?.run.run_id, second?.run.run_id].sort()).toEqual(["a1", "b1"]);
    expect(first).toMatchObject({ attempt: 1, resumed: false, run: { status: "running" } });
    expect(await store.claim(LONG_LEASE)).toEqual({});
    expect((await store.get("a1"))?.status).toBe("running");
    expect(ids(await store.inflight("A"))).toEqual(["a1", "a2"]);
    expect(await store.queued("A")).toBe(1);
    expect(await store.finish("a1", 1, "success", closing)).toBe(true);
    expect((await claim())?.run.run_id).toBe("a2");
    expect((await store.get("a1"))?.status).toBe("success");
  });

  it("claims a delayed run once it is due, telling when that is, and keeps the runs behind it waiting", async () => {
    const { store } = backend;
    const startAt = Date.now() + 150;
    await enqueue("later", "T", { startAt });
    await enqueue("behind", "T");
    expect(await store.claim(LONG_LEASE)).toEqual({ nextDueAt: startAt });
    const claimed = await eventually(claim, (run) => run !== undefined, 5000);
    expect(Date.now()).toBeGreaterThanOrEqual(startAt);
    expect(claimed?.run.run_id).toBe("later");
  });

  it("rejects a run on a busy thread (one running or queued) when asked, storing nothing", async () => {
    await enqueue("queued", "Q");
    expect(await enqueue("rejected", "Q", { rejectIfBusy: true })).toBe("busy");
    await claim();
    expect(await enqueue("rejected", "Q", { rejectIfBusy: true })).toBe("busy");
    expect(await backend.store.get("rejected")).toBeUndefined();
    expect(await enqueue("free", "F", { rejectIfBusy: true })).toBe("queued");
  });

  it("creates a given run id once: racing, while it runs, after it ended", async () => {
    const { store } = backend;
    const outcomes = await Promise.all([1, 2, 3].map(() => enqueue("slot", "T")));
    expect(outcomes.sort()).toEqual(["exists", "exists", "queued"]);
    const claimed = await claim();
    expect(await enqueue("slot", "T")).toBe("exists");
    await store.finish("slot", claimed!.attempt, "success", closing);
    expect(await enqueue("slot", "U")).toBe("exists");
    expect(await store.queued("T")).toBe(0);
    expect((await store.get("slot"))?.status).toBe("success");
    expect(await store.list("U", { limit: 10, offset: 0 })).toEqual([]);
  });

  it("claims a run at creation for a free local worker only when it is due and its thread has no other run", async () => {
    const { store } = backend;
    const claimNow = (runId: string, threadId: string, startAt = Date.now()) =>
      store.enqueue(newRun(runId, threadId), { startAt, rejectIfBusy: false, claimLeaseMs: LONG_LEASE });
    expect(await claimNow("first", "T")).toMatchObject({
      outcome: "claimed",
      claimed: { attempt: 1, resumed: false, run: { run_id: "first", status: "running" } },
    });
    expect((await store.get("first"))?.status).toBe("running");
    expect((await claimNow("second", "T")).outcome).toBe("queued");
    expect(await claim()).toBeUndefined();
    expect(await store.finish("first", 1, "success", closing)).toBe(true);
    expect((await claim())?.run.run_id).toBe("second");
    expect((await claimNow("later", "U", Date.now() + 60_000)).outcome).toBe("queued");
    expect((await store.get("later"))?.status).toBe("pending");
  });

  it("renews the holder's lease, telling it about a cancel request; the holder of an ended run has lost it, appends too", async () => {
    const { store } = backend;
    await enqueue("r", "T");
    const claimed = await claim();
    expect(await store.renew("r", claimed!.attempt, LONG_LEASE)).toEqual({ lost: false, cancel: undefined });
    expect(await store.renew("r", claimed!.attempt + 1, LONG_LEASE)).toEqual({ lost: true });
    expect(await store.cancel("r", "interrupt")).toBe("signalled");
    expect(await store.renew("r", claimed!.attempt, LONG_LEASE)).toEqual({ lost: false, cancel: "interrupt" });
    expect(await store.finish("r", claimed!.attempt + 1, "success", closing)).toBe(false);
    expect(await store.finish("r", claimed!.attempt, "interrupted", closing)).toBe(true);
    expect(await store.renew("r", claimed!.attempt, LONG_LEASE)).toEqual({ lost: true });
    expect(await store.finish("r", claimed!.attempt, "success", closing)).toBe(false);
    expect((await store.get("r"))?.status).toBe("interrupted");
    // A worker's appends are fenced too: once its run is finished, its events are refused.
    const late = [{ event: "values", data: "1" }];
    expect(await backend.events.append("r", late, undefined, claimed!.attempt)).toBe(false);
    expect(await backend.events.startAttempt("r", late[0]!, claimed!.attempt)).toBe(false);
    expect((await backend.events.range("r", -1, 10)).map(({ event }) => event)).toEqual([END_EVENT]);
    expect(await store.renew("unknown", 1, LONG_LEASE)).toEqual({ lost: true });
  });

  it("closes the run's log with the closing event in the same step as its final status, and tells watchers", async () => {
    const { store, events } = backend;
    await enqueue("r", "T");
    const claimed = await claim();
    await events.append("r", [{ event: "metadata", data: "{}" }]);
    const seen: boolean[] = [];
    const unwatch = await events.watch("r", (ended) => seen.push(ended));
    await store.finish("r", claimed!.attempt, "success", closing);
    expect(await events.last("r")).toEqual({ id: 1, event: END_EVENT, data: closing.data });
    expect((await events.range("r", -1, 10)).map((event) => event.event)).toEqual(["metadata", END_EVENT]);
    await waitUntil(async () => seen.includes(true), "the watcher learns the end");
    await unwatch();
  });

  it("removes a run finished as deleted (rolled back), closing its log", async () => {
    const { store, events } = backend;
    await enqueue("r", "T");
    const claimed = await claim();
    expect(
      await store.finish("r", claimed!.attempt, "deleted", { data: '{"status":"deleted"}', keepSeconds: 60 }),
    ).toBe(true);
    expect(await store.get("r")).toBeUndefined();
    expect(await store.list("T", { limit: 10, offset: 0 })).toEqual([]);
    expect(await store.allInflight()).toEqual([]);
    expect((await events.last("r"))?.event).toBe(END_EVENT);
  });

  it("hands a run back on shutdown, first in its queue, without counting the attempt; the next claim resumes it", async () => {
    const { store } = backend;
    await enqueue("r1", "T");
    await enqueue("r2", "T");
    const claimed = await claim();
    await store.requeue("r1", claimed!.attempt);
    expect((await store.get("r1"))?.status).toBe("pending");
    expect(ids(await store.inflight("T"))).toEqual(["r1", "r2"]);
    expect(await claim()).toMatchObject({
      run: { run_id: "r1" },
      attempt: 1,
      resumed: true,
      firstStartedAt: claimed!.firstStartedAt,
    });
  });

  it("cancels pending runs at once (interrupt keeps the record, rollback deletes it) and signals running ones", async () => {
    const { store } = backend;
    const signalled: [string, CancelAction][] = [];
    const unsubscribe = await backend.onCancel((runId, action) => signalled.push([runId, action]));
    await enqueue("running", "T");
    await enqueue("kept", "T");
    await enqueue("gone", "T");
    await enqueue("next", "T");
    const claimed = await claim();
    expect(await store.cancel("kept", "interrupt")).toBe("cancelled");
    expect(await store.cancel("gone", "rollback")).toBe("cancelled");
    expect((await store.get("kept"))?.status).toBe("interrupted");
    expect(await store.get("gone")).toBeUndefined();
    expect(ids(await store.inflight("T"))).toEqual(["running", "next"]);
    expect(await store.cancel("running", "rollback")).toBe("signalled");
    await waitUntil(async () => signalled.length > 0, "the cancel listener is called");
    expect(signalled).toEqual([["running", "rollback"]]);
    expect((await store.get("running"))?.status).toBe("running");
    await store.finish("running", claimed!.attempt, "deleted", closing);
    expect(await store.cancel("kept", "interrupt")).toBe("finished");
    expect(await store.cancel("missing", "interrupt")).toBe("missing");
    expect((await claim())?.run.run_id).toBe("next");
    await unsubscribe();
  });

  it("deletes runs that are not running", async () => {
    const { store } = backend;
    await enqueue("running", "T");
    await enqueue("pending", "T");
    await enqueue("done", "U");
    const running = await claim();
    const done = await claim();
    await store.finish("done", done!.attempt, "success", closing);
    expect(await store.delete("running")).toBe("running");
    expect(await store.delete("pending")).toBe("deleted");
    expect(await store.delete("pending")).toBe("missing");
    expect(await store.delete("done")).toBe("deleted");
    expect(ids(await store.inflight("T"))).toEqual(["running"]);
    expect(ids(await store.list("T", { limit: 10, offset: 0 }))).toEqual(["running"]);
    expect(await store.list("U", { limit: 10, offset: 0 })).toEqual([]);
    expect(running?.run.run_id).toBe("running");
  });

  it("wakes listeners when a run is queued and when finishing a run leaves its thread's next run claimable", async () => {
    const { store } = backend;
    const woken: string[] = [];
    const unsubscribe = await backend.onWake((threadId) => woken.push(threadId));
    await enqueue("r1", "T");
    await waitUntil(async () => woken.includes("T"), "enqueueing wakes the thread");
    await enqueue("r2", "T");
    const claimed = await claim();
    woken.length = 0;
    await store.finish("r1", claimed!.attempt, "success", closing);
    await waitUntil(async () => woken.includes("T"), "finishing wakes the thread's next run");
    await unsubscribe();
  });

  if (leasesExpire) {
    it("takes over a run whose lease expired: requeued, then failed past max attempts; the old holder is fenced", async () => {
      const { store } = backend;
      await enqueue("r", "T");
      const first = await claim(1);
      const sweep = () =>
        eventually(
          () => store.sweepExpired(2),
          (expired) => expired.length > 0,
          5000,
        );
      expect(await sweep()).toEqual([{ runId: "r", threadId: "T", outcome: "pending", attempt: 1 }]);
      expect((await store.get("r"))?.status).toBe("pending");
      const second = await claim(1);
      expect(second).toMatchObject({ attempt: 2, resumed: true, firstStartedAt: first?.firstStartedAt });
      expect(await store.renew("r", 1, LONG_LEASE)).toEqual({ lost: true });
      expect(await store.finish("r", 1, "success", closing)).toBe(false);
      // The old holder's events are refused; the new one's are appended.
      const { events } = backend;
      const marker = { event: "metadata", data: "{}" };
      expect(await events.append("r", [{ event: "values", data: "1" }], undefined, 1)).toBe(false);
      expect(await events.startAttempt("r", marker, 1)).toBe(false);
      expect(await events.startAttempt("r", marker, 2)).toBe(true);
      expect(await events.append("r", [{ event: "values", data: "2" }], undefined, 2)).toBe(true);
      expect((await events.range("r", -1, 10)).map(({ data }) => data)).toEqual(["{}", "2"]);
      expect(await sweep()).toEqual([{ runId: "r", threadId: "T", outcome: "error", attempt: 2 }]);
      expect((await store.get("r"))?.status).toBe("error");
      expect(await store.allInflight()).toEqual([]);
    });
  } else {
    it("never expires a lease: the single process settles its own runs", async () => {
      const { store } = backend;
      await enqueue("r", "T");
      const claimed = await claim(0);
      expect(await store.sweepExpired(1)).toEqual([]);
      expect(await store.renew("r", claimed!.attempt, LONG_LEASE)).toEqual({ lost: false, cancel: undefined });
    });
  }
}
