import { afterAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { extensionsFixtureConfig } from "../long-term-store/testing/server.ts";
import { type ServerProcess, spawnServer } from "../runs/testing/process.ts";
import { waitUntil } from "../runs/testing/wait.ts";

/** `agent-server serve` with a crons module that accepts seconds and, on request, crashes mid-firing. */
const harness = new URL("./testing/serve.ts", import.meta.url).pathname;
const spawnHarness = (prefix: string, env: Record<string, string>) =>
  spawnServer(testRedisUrl(), prefix, env, extensionsFixtureConfig, harness);

/** This process's won/lost cron claims, from its /metrics. */
async function claimCounts(url: string): Promise<{ won: number; lost: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const count = (outcome: string) =>
    Number(new RegExp(`^agentplane_cron_claims_total\\{outcome="${outcome}"\\} (\\d+)`, "m").exec(text)?.[1] ?? 0);
  return { won: count("won"), lost: count("lost") };
}

type CronRun = { status: string; metadata?: Record<string, unknown> | null };
const slotOf = (run: CronRun) => Date.parse(String(run.metadata?.cron_slot));

/** Polls until runs were started for `count` slots after `afterMs`. */
function waitForSlotsAfter(server: ServerProcess, threadId: string, afterMs: number, count: number) {
  return waitUntil(
    async () => {
      const runs = await server.client.runs.list(threadId, { limit: 100 });
      return runs.filter((run) => slotOf(run) > afterMs).length >= count;
    },
    `runs for ${count} slots after ${new Date(afterMs).toISOString()}`,
    30_000,
  );
}

/** Runs of the thread once none is pending or running any more. */
async function settledRuns(server: ServerProcess, threadId: string): Promise<CronRun[]> {
  const list = () => server.client.runs.list(threadId, { limit: 100 });
  await waitUntil(
    async () => (await list()).every((run) => run.status !== "pending" && run.status !== "running"),
    "the cron's runs to finish",
    30_000,
  );
  return list();
}

/** The cron slots the runs were started for: each must be there once, none left out, one second apart. */
function expectEverySlotOnce(runs: CronRun[]): number[] {
  const slots = runs.map(slotOf).sort((a, b) => a - b);
  expect(new Set(slots).size).toBe(slots.length);
  for (let i = 1; i < slots.length; i++) expect((slots[i] as number) - (slots[i - 1] as number)).toBe(1000);
  return slots;
}

/**
 * Two server processes on one Redis, a cron firing every second (the harness accepts a seconds
 * field) and schedulers ticking every 100 ms: each slot must start exactly one run, also after
 * one process is killed. The two tests use prefixes of their own and mostly wait for cron slots,
 * so they run at once; each starts its processes one after another (started at once on a busy
 * machine, each takes as long as all of them).
 */
describe.concurrent("crons across two server processes", () => {
  const servers: ServerProcess[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.kill()));
  });
  /** Processes started one after another, each kept for afterAll as it comes up. */
  async function started(prefix: string, envs: Record<string, string>[]): Promise<ServerProcess[]> {
    const own: ServerProcess[] = [];
    for (const env of envs) {
      const server = await spawnHarness(prefix, env);
      servers.push(server);
      own.push(server);
    }
    return own;
  }

  it("fires each due slot exactly once, and keeps firing when one process dies", { timeout: 90_000 }, async () => {
    const prefix = uniquePrefix("crons-replicas");
    const env = { CRON_TICK_MS: "100" };
    const [first, second] = (await started(prefix, [env, env])) as [ServerProcess, ServerProcess];
    const pair = [first, second];

    const thread = await first.client.threads.create();
    const cron = await first.client.crons.createForThread(thread.thread_id, "adder", {
      schedule: "* * * * * *",
      input: { a: 1, b: 1 },
    });
    // the slots so far were claimed by the two schedulers together (a lost claim: the other one won)
    await waitUntil(
      async () => {
        const claims = await Promise.all(pair.map((server) => claimCounts(server.url)));
        return claims.reduce((sum, { won }) => sum + won, 0) >= 3;
      },
      "three slots claimed",
      30_000,
    );
    await first.kill();
    const killedAt = Date.now();
    await waitForSlotsAfter(second, thread.thread_id, killedAt, 3);
    await second.client.crons.delete(cron.cron_id);

    const runs = await settledRuns(second, thread.thread_id);
    const slots = expectEverySlotOnce(runs);
    expect(slots.length).toBeGreaterThanOrEqual(6);
    expect(slots.filter((slot) => slot > killedAt).length).toBeGreaterThanOrEqual(3);
    expect(runs.every((run) => run.status === "success")).toBe(true);
  });

  it("fires a slot exactly once when the process that claimed it is SIGKILLed before or after starting its run", {
    timeout: 120_000,
  }, async () => {
    const prefix = uniquePrefix("crons-crash");
    const leaseMs = 1500;
    const env = { CRON_TICK_MS: "100", CRON_CLAIM_LEASE_MS: String(leaseMs) };
    // the last two kill themselves right after claiming a slot, or after starting its run
    const [survivor, ...crashing] = (await started(prefix, [
      env,
      { ...env, CRON_HARNESS_CRASH_AFTER: "claim" },
      { ...env, CRON_HARNESS_CRASH_AFTER: "run" },
    ])) as [ServerProcess, ServerProcess, ServerProcess];
    const died = crashing.map(
      ({ child }) =>
        new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_, signal) => resolve(signal))),
    );

    const thread = await survivor.client.threads.create();
    const cron = await survivor.client.crons.createForThread(thread.thread_id, "adder", {
      schedule: "* * * * * *",
      input: { a: 2, b: 2 },
    });
    // both die as soon as they win a slot; their slots stay in flight until the lease ends, and
    // the cron moves past a slot only once it is acknowledged: runs for later slots mean the
    // survivor took the dead processes' slots over
    expect(await Promise.all(died)).toEqual(["SIGKILL", "SIGKILL"]);
    const lastDeath = Date.now();
    await waitForSlotsAfter(survivor, thread.thread_id, lastDeath + leaseMs, 2);
    await survivor.client.crons.delete(cron.cron_id);

    const runs = await settledRuns(survivor, thread.thread_id);
    const slots = expectEverySlotOnce(runs);
    expect(slots.length).toBeGreaterThanOrEqual(4);
    expect(runs.every((run) => run.status === "success")).toBe(true);
  });
});
