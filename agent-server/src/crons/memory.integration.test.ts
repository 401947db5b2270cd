import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ExtensionTestServer, startExtensionServer } from "../long-term-store/testing/server.ts";
import { eventually } from "../runs/testing/wait.ts";
import { defaultModules } from "../server.ts";
import type { CronsModule } from "./module.ts";
import { cronRunId } from "./service.ts";

/** `agent-server dev`: crons on in-memory storage, with an injected clock. */

describe("crons in dev mode (in-memory storage)", () => {
  let app: ExtensionTestServer;
  let crons: CronsModule;
  let clock = Date.now();

  beforeAll(async () => {
    const modules = defaultModules({
      crons: { settings: { tickMs: 60_000, misfireGraceMs: 60_000, leaseMs: 10_000 }, now: () => clock },
    });
    crons = modules.find((module) => module.name === "crons") as CronsModule;
    app = await startExtensionServer(undefined, { modules });
  });
  afterAll(() => app?.close());

  it("schedules and fires a thread cron once per slot", async () => {
    const thread = await app.client.threads.create();
    const cron = await app.client.crons.createForThread(thread.thread_id, "adder", {
      schedule: "0 * * * *",
      input: { a: 2, b: 3 },
    });
    clock = Date.parse(cron.next_run_date as string);
    expect(await crons.scheduler().tick()).toBe(1);
    expect(await crons.scheduler().tick()).toBe(0);
    const runs = await eventually(
      () => app.client.runs.list(thread.thread_id),
      (list) => list[0]?.status === "success",
    );
    expect(runs).toHaveLength(1);
    expect((await app.client.threads.getState(thread.thread_id)).values).toMatchObject({ sum: 5 });
  });

  it("claims a slot again when its claim is not acknowledged in time, without a second run", async () => {
    const thread = await app.client.threads.create();
    const cron = await app.client.crons.createForThread(thread.thread_id, "adder", {
      schedule: "30 * * * *",
      input: { a: 1, b: 1 },
    });
    const service = crons.service();
    const slot = Date.parse(cron.next_run_date as string);
    clock = slot;
    expect(await service.store.claim(cron.cron_id, slot, { owner: "dead", now: clock, until: clock + 10_000 })).toBe(
      true,
    );
    await service.fire(await service.get(cron.cron_id), slot);
    expect(await crons.scheduler().tick()).toBe(0);
    clock += 10_000;
    expect(await crons.scheduler().tick()).toBe(1);
    expect(await crons.scheduler().tick()).toBe(0);
    const runs = await eventually(
      () => app.client.runs.list(thread.thread_id),
      (list) => list[0]?.status === "success",
    );
    expect(runs.map((run) => run.run_id)).toEqual([cronRunId(cron.cron_id, slot)]);
    expect(Date.parse((await service.get(cron.cron_id)).next_run_date as string)).toBe(slot + 3_600_000);
  });
});
