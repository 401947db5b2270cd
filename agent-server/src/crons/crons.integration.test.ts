import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { type ExtensionTestServer, startExtensionServer } from "../long-term-store/testing/server.ts";
import { runsModule } from "../runs/module.ts";
import { fastRunSettings } from "../runs/testing/server.ts";
import { eventually } from "../runs/testing/wait.ts";
import { startWebhookReceiver } from "../runs/testing/webhook-receiver.ts";
import { defaultModules } from "../server.ts";
import type { CronsModule } from "./module.ts";
import { cronRunId } from "./service.ts";

describe("crons on Redis (one process, injected clock)", () => {
  let app: ExtensionTestServer;
  let crons: CronsModule;
  let clock = Date.now();
  const json = { "content-type": "application/json" };
  const getCron = async (cronId: string) =>
    (await (await fetch(`${app.url}/runs/crons/${cronId}`)).json()) as { next_run_date: string | null };

  beforeAll(async () => {
    const runs = runsModule({ settings: fastRunSettings });
    const modules = defaultModules({
      runs,
      crons: {
        // the test ticks by hand
        settings: { tickMs: 60_000, misfireGraceMs: 60_000, leaseMs: 10_000 },
        now: () => clock,
      },
    });
    crons = modules.find((module) => module.name === "crons") as CronsModule;
    app = await startExtensionServer(testRedisUrl(), {
      prefix: uniquePrefix("crons"),
      modules,
      // The webhook receivers listen on loopback, which webhooks may reach only when allowed.
      env: { WEBHOOK_ALLOWED_HOSTS: "127.0.0.1" },
    });
  });
  afterAll(() => app?.close());

  it("creates, reads, searches, counts, patches and deletes crons through the SDK", async () => {
    const { client } = app;
    const thread = await client.threads.create();
    const stateless = await client.crons.create("adder", {
      schedule: "*/5 * * * *",
      input: { a: 1, b: 2 },
      metadata: { team: "blue" },
    });
    expect(stateless).toMatchObject({
      thread_id: null,
      schedule: "*/5 * * * *",
      enabled: true,
      on_run_completed: "delete",
      payload: { input: { a: 1, b: 2 } },
      metadata: { team: "blue" },
    });
    const next = Date.parse(stateless.next_run_date as string);
    expect(next).toBeGreaterThan(Date.now());
    expect(new Date(next).getUTCMinutes() % 5).toBe(0);

    const onThread = await client.crons.createForThread(thread.thread_id, "adder", {
      schedule: "0 9 * * *",
      input: { a: 2, b: 2 },
      metadata: { team: "red" },
    });
    const zoned = await fetch(`${app.url}/threads/${thread.thread_id}/runs/crons`, {
      method: "POST",
      headers: json,
      body: JSON.stringify({ assistant_id: "adder", schedule: "0 9 * * *", timezone: "America/New_York" }),
    }).then((r) => r.json() as Promise<{ cron_id: string; next_run_date: string; timezone: string }>);
    expect(new Date(onThread.next_run_date as string).getUTCHours()).toBe(9);
    expect(hourIn("America/New_York", zoned.next_run_date)).toBe(9);
    expect(await getCron(onThread.cron_id)).toEqual(onThread);

    const byThread = await client.crons.search({ threadId: thread.thread_id, sortBy: "created_at", sortOrder: "asc" });
    expect(byThread.map((c) => c.cron_id)).toEqual([onThread.cron_id, zoned.cron_id]);
    const selected = await client.crons.search({
      threadId: thread.thread_id,
      select: ["cron_id", "schedule"],
      limit: 1,
    });
    expect(selected).toEqual([{ cron_id: zoned.cron_id, schedule: "0 9 * * *" }]);
    expect(await client.crons.count({ threadId: thread.thread_id })).toBe(2);
    const blue = await fetch(`${app.url}/runs/crons/count`, {
      method: "POST",
      headers: json,
      body: JSON.stringify({ metadata: { team: "blue" } }),
    });
    expect(await blue.json()).toBe(1);

    const patched = await client.crons.update(onThread.cron_id, {
      schedule: "30 * * * *",
      endTime: "2100-01-01T00:00:00Z",
      metadata: { extra: 1 },
      input: { a: 5, b: 5 },
    });
    expect(patched).toMatchObject({
      schedule: "30 * * * *",
      metadata: { team: "red", extra: 1 },
      payload: { input: { a: 5, b: 5 } },
    });
    expect(new Date(patched.next_run_date as string).getUTCMinutes()).toBe(30);
    const cleared = (await fetch(`${app.url}/runs/crons/${onThread.cron_id}`, {
      method: "PATCH",
      headers: json,
      body: JSON.stringify({ end_time: null, enabled: false }),
    }).then((r) => r.json())) as { end_time: unknown; enabled: boolean; next_run_date: unknown };
    expect(cleared).toMatchObject({ end_time: null, enabled: false, next_run_date: null });
    expect(await client.crons.search({ enabled: false, threadId: thread.thread_id })).toHaveLength(1);

    for (const id of [stateless.cron_id, onThread.cron_id, zoned.cron_id]) await client.crons.delete(id);
    const gone = await fetch(`${app.url}/runs/crons/${stateless.cron_id}`);
    expect(gone.status).toBe(404);
    expect(await gone.json()).toEqual({ detail: expect.stringContaining("not found") });
  });

  it("searches and counts by graph id as by the id of the graph's default assistant", async () => {
    const { client } = app;
    const thread = await client.threads.create();
    const cron = await client.crons.createForThread(thread.thread_id, "adder", { schedule: "0 9 * * *" });
    const byGraph = await client.crons.search({ assistantId: "adder", threadId: thread.thread_id });
    expect(byGraph.map((c) => c.cron_id)).toEqual([cron.cron_id]);
    const byId = await client.crons.search({ assistantId: cron.assistant_id, threadId: thread.thread_id });
    expect(byId.map((c) => c.cron_id)).toEqual([cron.cron_id]);
    expect(await client.crons.count({ assistantId: "adder", threadId: thread.thread_id })).toBe(1);
    expect(await client.crons.count({ assistantId: "no-such-graph", threadId: thread.thread_id })).toBe(0);
    await client.crons.delete(cron.cron_id);
  });

  it("a graph id names its default assistant even after that was deleted (read through the assistant service)", async () => {
    const { client } = app;
    const { assistant_id } = await client.assistants.get("adder");
    await client.assistants.delete(assistant_id);
    const thread = await client.threads.create();
    const cron = await client.crons.createForThread(thread.thread_id, "adder", { schedule: "0 9 * * *" });
    expect(cron.assistant_id).toBe(assistant_id);
    expect((await client.assistants.get(assistant_id)).graph_id).toBe("adder");
    await client.crons.delete(cron.cron_id);
  });

  it("refuses a metadata PATCH that would widen the cron's metadata past the key limit, changing nothing", async () => {
    const keys = (from: number, count: number) =>
      Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${from + i}`, from + i]));
    const cron = await app.client.crons.create("adder", { schedule: "0 9 * * *", metadata: keys(0, 100) });
    const patch = (metadata: object) =>
      fetch(`${app.url}/runs/crons/${cron.cron_id}`, {
        method: "PATCH",
        headers: json,
        body: JSON.stringify({ metadata }),
      });
    expect((await patch(keys(100, 28))).status).toBe(200);
    const stored = await getCron(cron.cron_id);
    const refused = await patch({ one_more: 1 });
    expect(refused.status).toBe(422);
    expect(await refused.json()).toMatchObject({ detail: [{ loc: ["body", "metadata"], type: "too_long" }] });
    expect(await getCron(cron.cron_id)).toEqual(stored);
    await app.client.crons.delete(cron.cron_id);
  });

  it("refuses bad schedules and unknown references with 4xx JSON", async () => {
    const thread = await app.client.threads.create();
    const cases: [string, unknown, number][] = [
      ["/runs/crons", { assistant_id: "adder", schedule: "not a cron" }, 422],
      ["/runs/crons", { assistant_id: "adder", schedule: "61 * * * *" }, 422],
      ["/runs/crons", { assistant_id: "adder", schedule: "* * * * * *" }, 422],
      ["/runs/crons", { assistant_id: "adder", schedule: "* * * * *", timezone: "Mars/Olympus" }, 422],
      ["/runs/crons", { assistant_id: "adder", schedule: "* * * * *", end_time: "tomorrow" }, 422],
      ["/runs/crons", { schedule: "* * * * *" }, 422],
      ["/runs/crons", { assistant_id: "no-such-graph", schedule: "* * * * *" }, 404],
      [
        "/threads/00000000-0000-4000-8000-000000000000/runs/crons",
        { assistant_id: "adder", schedule: "* * * * *" },
        404,
      ],
      [`/threads/${thread.thread_id}/runs/crons`, { assistant_id: "adder", schedule: "* * *" }, 422],
      ["/runs/crons/search", { limit: 0 }, 422],
      ["/runs/crons/search", { sort_by: "nope" }, 422],
    ];
    for (const [path, body, status] of cases) {
      const response = await fetch(`${app.url}${path}`, { method: "POST", headers: json, body: JSON.stringify(body) });
      expect({ path, body, status: response.status }).toEqual({ path, body, status });
      expect(await response.json()).toHaveProperty("detail");
    }
    const badId = await fetch(`${app.url}/runs/crons/not-a-uuid`);
    expect(badId.status).toBe(422);
    expect(await app.client.crons.count({ threadId: thread.thread_id })).toBe(0);
  });

  it("fires each due slot once: thread crons run on their thread, the next run moves on", async () => {
    const { client } = app;
    const thread = await client.threads.create();
    const cron = await client.crons.createForThread(thread.thread_id, "adder", {
      schedule: "*/10 * * * *",
      input: { a: 20, b: 22 },
    });
    const slot = Date.parse(cron.next_run_date as string);
    clock = slot - 1;
    expect(await crons.scheduler().tick()).toBe(0);
    clock = slot + 10;
    expect(await crons.scheduler().tick()).toBe(1);
    expect(await crons.scheduler().tick()).toBe(0);
    const moved = await getCron(cron.cron_id);
    expect(Date.parse(moved.next_run_date as string)).toBe(slot + 10 * 60_000);

    const runs = await eventually(
      () => client.runs.list(thread.thread_id),
      (list) => list.length === 1 && list[0]?.status === "success",
    );
    expect(runs).toHaveLength(1);
    expect(runs[0]?.metadata).toMatchObject({ cron_id: cron.cron_id, cron_slot: new Date(slot).toISOString() });
    expect((await client.threads.getState(thread.thread_id)).values).toMatchObject({ sum: 42 });

    // down for an hour: one late firing, then back on schedule from now
    clock = slot + 60 * 60_000 + 5;
    expect(await crons.scheduler().tick()).toBe(1);
    expect(Date.parse((await getCron(cron.cron_id)).next_run_date as string)).toBe(slot + 70 * 60_000);
    await client.crons.delete(cron.cron_id);
  });

  it("takes over a slot whose owner died unacknowledged once its lease ends: still one run per slot", async () => {
    const { client } = app;
    const service = crons.service();
    const claimAsDeadProcess = (cronId: string, slot: number) =>
      service.store.claim(cronId, slot, { owner: "dead", now: clock, until: clock + 10_000 });
    // each execution of a run posts the webhook once: a slot started twice would show up here
    const hook = await startWebhookReceiver();
    const thread = await client.threads.create();
    const cron = await client.crons.createForThread(thread.thread_id, "adder", {
      schedule: "*/10 * * * *",
      input: { a: 1, b: 2 },
      webhook: hook.url,
    });
    const kept = await client.crons.create("adder", { schedule: "*/10 * * * *", onRunCompleted: "keep" });
    const slot = Date.parse(cron.next_run_date as string);
    clock = slot + 10;
    // a process claims both slots, creates their runs and dies before acknowledging them
    for (const { cron_id } of [cron, kept]) {
      expect(await claimAsDeadProcess(cron_id, slot)).toBe(true);
      await service.fire(await service.get(cron_id), slot);
    }
    expect(await crons.scheduler().tick()).toBe(0);
    expect((await getCron(cron.cron_id)).next_run_date).toBe(new Date(slot).toISOString());
    clock += 10_000;
    expect(await crons.scheduler().tick()).toBe(2);
    expect(await crons.scheduler().tick()).toBe(0);
    expect(Date.parse((await getCron(cron.cron_id)).next_run_date as string)).toBe(slot + 10 * 60_000);

    // the next slot: the owner dies right after claiming, so the process taking over starts the run
    const next = slot + 10 * 60_000;
    clock = next + 10;
    expect(await claimAsDeadProcess(cron.cron_id, next)).toBe(true);
    expect(await crons.scheduler().tick()).toBe(1); // the other cron's slot, not the one in flight
    clock += 10_000;
    expect(await crons.scheduler().tick()).toBe(1);

    const runs = await eventually(
      () => client.runs.list(thread.thread_id),
      (list) => list.length === 2 && list.every((run) => run.status === "success"),
    );
    const slotRuns = [cronRunId(cron.cron_id, slot), cronRunId(cron.cron_id, next)].sort();
    expect(runs.map((run) => run.run_id).sort()).toEqual(slotRuns);
    await eventually(
      async () => hook.received.length,
      (count) => count >= 2,
    );
    // each slot's run executed once: its event log holds one attempt (a second would post the webhook again)
    for (const runId of slotRuns) {
      const attempts: unknown[] = [];
      for await (const event of client.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1" })) {
        if (event.event === "metadata") attempts.push((event.data as { attempt: number }).attempt);
      }
      expect(attempts).toEqual([1]);
    }
    await hook.close();
    expect(hook.received.map(({ body }) => body.run_id).sort()).toEqual(slotRuns);
    const threads = await client.threads.search({ metadata: { cron_id: kept.cron_id } });
    expect(threads.map((item) => item.thread_id).sort()).toEqual(
      [cronRunId(kept.cron_id, slot), cronRunId(kept.cron_id, next)].sort(),
    );
    await client.crons.delete(cron.cron_id);
    await client.crons.delete(kept.cron_id);
  });

  it("deleting a thread deletes its crons at once, not when they next fire", async () => {
    const { client } = app;
    const [thread, other] = [await client.threads.create(), await client.threads.create()];
    const doomed = await client.crons.createForThread(thread.thread_id, "adder", { schedule: "0 0 1 1 *", input: {} });
    const kept = await client.crons.createForThread(other.thread_id, "adder", { schedule: "0 0 1 1 *", input: {} });
    await client.threads.delete(thread.thread_id);
    expect((await fetch(`${app.url}/runs/crons/${doomed.cron_id}`)).status).toBe(404);
    expect(await client.crons.search({ threadId: thread.thread_id })).toEqual([]);
    expect((await getCron(kept.cron_id)).next_run_date).not.toBeNull();
    await client.crons.delete(kept.cron_id);
  });

  it("stateless crons get a new thread per run: deleted afterwards, or kept with on_run_completed keep", async () => {
    const { client } = app;
    const hook = await startWebhookReceiver();
    try {
      const deleting = await client.crons.create("adder", {
        schedule: "15 * * * *",
        input: { a: 1, b: 1 },
        webhook: hook.url,
      });
      const keeping = await client.crons.create("adder", {
        schedule: "15 * * * *",
        input: { a: 2, b: 2 },
        onRunCompleted: "keep",
      });
      clock = Date.parse(deleting.next_run_date as string) + 1;
      expect(await crons.scheduler().tick()).toBe(2);

      const kept = await eventually(
        () => client.threads.search({ metadata: { cron_id: keeping.cron_id } }),
        (threads) => threads.length === 1 && threads[0]?.status === "idle",
      );
      expect(kept).toHaveLength(1);
      expect((await client.threads.getState(kept[0]?.thread_id as string)).values).toMatchObject({ sum: 4 });

      const delivered = await eventually(
        async () => hook.received,
        (requests) => requests.length === 1,
      );
      expect(delivered[0]?.body).toMatchObject({
        status: "success",
        values: { sum: 2 },
        metadata: { cron_id: deleting.cron_id },
      });
      const removed = await eventually(
        () => client.threads.search({ metadata: { cron_id: deleting.cron_id } }),
        (threads) => threads.length === 0,
      );
      expect(removed).toEqual([]);
      await client.crons.delete(deleting.cron_id);
      await client.crons.delete(keeping.cron_id);
    } finally {
      await hook.close();
    }
  });

  it("a failing or hanging webhook never fails the run; failures are retried", async () => {
    const { client } = app;
    const failing = await startWebhookReceiver({ status: 500 });
    const hanging = await startWebhookReceiver({ hang: true });
    try {
      const thread = await client.threads.create();
      const first = await client.runs.wait(thread.thread_id, "adder", { input: { a: 1, b: 2 }, webhook: failing.url });
      expect(first).toMatchObject({ sum: 3 });
      const second = await client.runs.wait(thread.thread_id, "adder", { input: { a: 3, b: 4 }, webhook: hanging.url });
      expect(second).toMatchObject({ sum: 7 });
      const runs = await client.runs.list(thread.thread_id);
      expect(runs.map((run) => run.status)).toEqual(["success", "success"]);
      // three attempts with 0.5 s then 1 s backoff
      const attempts = await eventually(
        async () => failing.received,
        (requests) => requests.length >= 3,
        10_000,
      );
      expect(attempts).toHaveLength(3);
      expect(attempts[0]?.body).toMatchObject({ status: "success", values: { sum: 3 } });
      expect(hanging.received.length).toBeGreaterThanOrEqual(1);
      expect(await client.threads.get(thread.thread_id)).toMatchObject({ status: "idle" });
    } finally {
      await failing.close();
      await hanging.close();
    }
  });

  it("reports crons as enabled in /info", async () => {
    const info = (await (await fetch(`${app.url}/info`)).json()) as { flags: Record<string, boolean> };
    expect(info.flags.crons).toBe(true);
  });
});

function hourIn(timeZone: string, iso: string): number {
  return Number(
    new Intl.DateTimeFormat("en-US", { timeZone, hour: "numeric", hourCycle: "h23" }).format(new Date(iso)),
  );
}
