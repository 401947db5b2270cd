import { afterAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { extensionsFixtureConfig } from "../long-term-store/testing/server.ts";
import { type ServerProcess, spawnServer } from "../runs/testing/process.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** This process's won/lost cron claims, from its /metrics. */
async function claimCounts(url: string): Promise<{ won: number; lost: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const count = (outcome: string) =>
    Number(new RegExp(`^agentplane_cron_claims_total\\{outcome="${outcome}"\\} (\\d+)`, "m").exec(text)?.[1] ?? 0);
  return { won: count("won"), lost: count("lost") };
}

/** Runs of the thread once none is pending or running any more. */
async function settledRuns(server: ServerProcess, threadId: string) {
  let runs = await server.client.runs.list(threadId, { limit: 100 });
  const deadline = Date.now() + 30_000;
  while (runs.some((run) => run.status === "pending" || run.status === "running") && Date.now() < deadline) {
    await sleep(250);
    runs = await server.client.runs.list(threadId, { limit: 100 });
  }
  return runs;
}

/** The cron slots the runs were started for: each must be there once, none left out, one second apart. */
function expectEverySlotOnce(runs: { metadata?: Record<string, unknown> | null }[]): number[] {
  const slots = runs.map((run) => Date.parse(String(run.metadata?.cron_slot))).sort((a, b) => a - b);
  expect(new Set(slots).size).toBe(slots.length);
  for (let i = 1; i < slots.length; i++) expect((slots[i] as number) - (slots[i - 1] as number)).toBe(1000);
  return slots;
}

/**
 * Two `agent-server serve` processes on one Redis, a cron firing every second (the test-only
 * seconds field, CRON_ALLOW_SECONDS) and schedulers ticking every 100 ms: each slot must start
 * exactly one run, also after one process is killed.
 */
describe("crons across two server processes", () => {
  const servers: ServerProcess[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.kill()));
  });

  it("fires each due slot exactly once, and keeps firing when one process dies", { timeout: 90_000 }, async () => {
    const prefix = uniquePrefix("crons-replicas");
    const env = { CRON_ALLOW_SECONDS: "true", CRON_TICK_MS: "100" };
    servers.push(await spawnServer(testRedisUrl(), prefix, env, extensionsFixtureConfig));
    servers.push(await spawnServer(testRedisUrl(), prefix, env, extensionsFixtureConfig));
    const [first, second] = servers as [ServerProcess, ServerProcess];

    const thread = await first.client.threads.create();
    const cron = await first.client.crons.createForThread(thread.thread_id, "adder", {
      schedule: "* * * * * *",
      input: { a: 1, b: 1 },
    });
    await sleep(4_000);
    // the slots so far were claimed by the two schedulers together (a lost claim: the other one won)
    const claims = await Promise.all(servers.map((server) => claimCounts(server.url)));
    expect(claims.reduce((sum, { won }) => sum + won, 0)).toBeGreaterThanOrEqual(3);
    await first.kill();
    await sleep(4_000);
    await second.client.crons.delete(cron.cron_id);
    const deletedAt = Date.now();

    const runs = await settledRuns(second, thread.thread_id);
    const slots = expectEverySlotOnce(runs);
    expect(slots.length).toBeGreaterThanOrEqual(6);
    expect(slots.at(-1)).toBeGreaterThan(deletedAt - 5_000);
    expect(runs.every((run) => run.status === "success")).toBe(true);
  });

  it("fires a slot exactly once when the process that claimed it is SIGKILLed before or after starting its run", {
    timeout: 120_000,
  }, async () => {
    const prefix = uniquePrefix("crons-crash");
    const env = { CRON_ALLOW_SECONDS: "true", CRON_TICK_MS: "100", CRON_CLAIM_LEASE_MS: "1500" };
    const survivor = await spawnServer(testRedisUrl(), prefix, env, extensionsFixtureConfig);
    servers.push(survivor);
    // CRON_TEST_CRASH_AFTER: the process kills itself right after claiming a slot, or after starting its run
    const crashing: ServerProcess[] = [];
    for (const step of ["claim", "run"]) {
      crashing.push(
        await spawnServer(testRedisUrl(), prefix, { ...env, CRON_TEST_CRASH_AFTER: step }, extensionsFixtureConfig),
      );
    }
    servers.push(...crashing);
    const died = crashing.map(
      ({ child }) =>
        new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_, signal) => resolve(signal))),
    );

    const thread = await survivor.client.threads.create();
    const cron = await survivor.client.crons.createForThread(thread.thread_id, "adder", {
      schedule: "* * * * * *",
      input: { a: 2, b: 2 },
    });
    // both die as soon as they win a slot; their slots stay in flight until the 1.5 s lease ends
    expect(await Promise.all(died)).toEqual(["SIGKILL", "SIGKILL"]);
    await sleep(4_000);
    await survivor.client.crons.delete(cron.cron_id);

    const runs = await settledRuns(survivor, thread.thread_id);
    const slots = expectEverySlotOnce(runs);
    expect(slots.length).toBeGreaterThanOrEqual(4);
    expect(runs.every((run) => run.status === "success")).toBe(true);
  });
});
