import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl } from "../../../testing/redis.ts";
import { type RunTestServer, startRunServer } from "../runs/testing/server.ts";

const ITERATIONS = 200;
/** Iterations in flight at once: enough to make requests interleave on the server. */
const PARALLEL = 10;
const steps = { input: { steps: 1, label: "race" } };

/**
 * Thread status over HTTP while runs are created and cancelled at the same time. No workers, so
 * a run stays pending until cancelled: the expected status is known at every step.
 */
describe.each([
  ["Redis", () => testRedisUrl()],
  ["in-memory", () => undefined],
])("thread status under racing requests on %s storage", (_kind, redisUrl) => {
  let server: RunTestServer;
  beforeAll(async () => {
    server = await startRunServer(redisUrl(), { workers: 0 });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** One round: a pending run, then its cancel racing the create of the next one. */
  async function race(): Promise<string[]> {
    const { client } = server;
    const thread = await client.threads.create();
    const first = await client.runs.create(thread.thread_id, "agent", steps);
    const [, second] = await Promise.all([
      client.runs.cancel(thread.thread_id, first.run_id),
      client.runs.create(thread.thread_id, "agent", steps),
    ]);
    const whileSecondPending = (await client.threads.get(thread.thread_id)).status;
    await client.runs.cancel(thread.thread_id, second.run_id);
    const afterBoth = (await client.threads.get(thread.thread_id)).status;
    return [whileSecondPending, afterBoth];
  }

  it(`a cancel racing a create: busy exactly while a run is pending (${ITERATIONS} rounds)`, async () => {
    const outcomes: string[][] = [];
    for (let done = 0; done < ITERATIONS; done += PARALLEL) {
      outcomes.push(...(await Promise.all(Array.from({ length: PARALLEL }, race))));
    }
    const wrong = outcomes.filter(([pending, after]) => pending !== "busy" || after !== "idle");
    expect(wrong).toEqual([]);
    expect(outcomes).toHaveLength(ITERATIONS);
  }, 120_000);
});
