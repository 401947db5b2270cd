import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, testRedisUrl } from "../../../testing/redis.ts";
import { RedisRunStore } from "./queue/redis-store.ts";
import { type RunTestServer, startRunServer } from "./testing/server.ts";
import { eventually, waitUntil } from "./testing/wait.ts";

/**
 * A "dead worker" is a claim taken through the store directly and never renewed, exactly what
 * a process killed mid-run leaves behind. The live server's workers must recover the run.
 */

let redis: Awaited<ReturnType<typeof connectTestRedis>>;
beforeAll(async () => {
  redis = await connectTestRedis();
});
afterAll(async () => {
  await redis?.close();
});

/**
 * `api` has no workers, so the dead worker is the only one that can claim; `startRescuer` then
 * brings up a process with a worker on the same Redis prefix.
 */
async function withServers(
  maxAttempts: number,
  test: (api: RunTestServer, deadWorker: RedisRunStore, startRescuer: () => Promise<RunTestServer>) => Promise<void>,
) {
  const prefix = `recovery-${randomUUID().slice(0, 8)}:`;
  const settings = { leaseMs: 400, maxAttempts };
  const servers = [await startRunServer(testRedisUrl(), { prefix, workers: 0, settings })];
  const startRescuer = async () => {
    const rescuer = await startRunServer(testRedisUrl(), { prefix, workers: 1, settings });
    servers.push(rescuer);
    return rescuer;
  };
  try {
    await test(servers[0]!, new RedisRunStore(redis, `${prefix}runs:`), startRescuer);
  } finally {
    await Promise.all(servers.map((server) => server.close()));
  }
}

const orphan = { input: { messages: [{ role: "human", content: "orphan" }] } };

describe("runs abandoned by a dead worker", () => {
  it("are taken over by a live worker after the lease expires and finish", async () => {
    await withServers(3, async (api, deadWorker, startRescuer) => {
      const thread = await api.client.threads.create();
      const run = await api.client.runs.create(thread.thread_id, "agent", orphan);
      expect((await deadWorker.claim(400)).claimed?.run.run_id).toBe(run.run_id);
      expect((await api.client.runs.get(thread.thread_id, run.run_id)).status).toBe("running");
      await startRescuer();
      const values = (await api.client.runs.join(thread.thread_id, run.run_id)) as { messages: { content: string }[] };
      expect(values.messages.at(-1)?.content).toBe("You said: orphan");
      expect((await api.client.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
      expect((await api.client.threads.get(thread.thread_id)).status).toBe("idle");
    });
  });

  it("are failed with a clear error once they ran out of attempts", async () => {
    await withServers(1, async (api, deadWorker, startRescuer) => {
      const thread = await api.client.threads.create();
      const run = await api.client.runs.create(thread.thread_id, "agent", orphan);
      expect((await deadWorker.claim(400)).claimed?.run.run_id).toBe(run.run_id);
      await startRescuer();
      const events = [];
      for await (const event of api.client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" })) {
        events.push(event);
      }
      expect(events.at(-1)).toMatchObject({ event: "error", data: { error: "RunAttemptsExceeded" } });
      expect((events.at(-1)?.data as { message: string }).message).toMatch(/abandoned 1 times/);
      expect((await api.client.runs.get(thread.thread_id, run.run_id)).status).toBe("error");
      expect((await api.client.threads.get(thread.thread_id)).status).toBe("error");
      const next = await api.client.runs.wait(thread.thread_id, "agent", {
        input: { messages: [{ role: "human", content: "still usable" }] },
      });
      expect(next).toMatchObject({ messages: [{ content: "still usable" }, { content: "You said: still usable" }] });
    });
  });

  it("graceful shutdown lets a run finish within the grace period, else hands it back to the queue", async () => {
    await withServers(3, async (api, _deadWorker, startRescuer) => {
      const first = await startRescuer();
      const thread = await api.client.threads.create();
      const quick = await api.client.runs.create(thread.thread_id, "steps", {
        input: { steps: 1, delay_ms: 300, label: "q" },
      });
      const long = await api.client.runs.create(thread.thread_id, "steps", {
        input: { steps: 6, delay_ms: 600, label: "l" },
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      // Grace is 2 s: the quick run finishes, the long one is stopped and queued again.
      await first.close();
      expect((await api.client.runs.get(thread.thread_id, quick.run_id)).status).toBe("success");
      expect((await api.client.runs.get(thread.thread_id, long.run_id)).status).toBe("pending");
      const second = await startRescuer();
      const values = (await second.client.runs.join(thread.thread_id, long.run_id)) as unknown as { done: string[] };
      expect(values.done).toEqual(["q:1", "l:2", "l:3", "l:4", "l:5", "l:6", "l:7"]);
    });
  });
});

describe("a worker whose run was taken over", () => {
  it("cannot append to the run's log any more, and stops the run", async () => {
    const prefix = `fenced-${randomUUID().slice(0, 8)}:`;
    // A long lease: the worker's renewal (every second) is not what stops it.
    const server = await startRunServer(testRedisUrl(), { prefix, workers: 1, settings: { leaseMs: 60_000 } });
    const rival = new RedisRunStore(redis, `${prefix}runs:`);
    try {
      const thread = await server.client.threads.create();
      const input = { steps: 200, delay_ms: 20, label: "old" };
      const run = await server.client.runs.create(thread.thread_id, "steps", { input });
      const log = `${prefix}runs:ev:${run.run_id}`;
      await waitUntil(async () => (await redis.xLen(log)) > 3, "the worker streams");
      // Its lease runs out as if the worker had paused (a GC pause, a slow step); another worker claims the run.
      await redis.zAdd(`${prefix}runs:leases`, { score: 0, value: run.run_id });
      const taken = await eventually(
        async () => {
          await rival.sweepExpired(3);
          return (await rival.claim(60_000)).claimed;
        },
        (claimed) => claimed !== undefined,
        5000,
      );
      expect(taken).toMatchObject({ attempt: 2 });
      const length = await redis.xLen(log);
      // Its one worker is free again for another run: the old execution stopped.
      const next = await server.client.threads.create();
      const done = await server.client.runs.wait(next.thread_id, "steps", { input: { steps: 1, label: "next" } });
      expect(done).toMatchObject({ done: ["next:1"] });
      // Nothing it produced after the takeover reached the log, and the run is the new owner's to settle.
      expect(await redis.xLen(log)).toBe(length);
      expect(await server.client.runs.get(thread.thread_id, run.run_id)).toMatchObject({ status: "running" });
      expect(await redis.hGet(`${prefix}runs:run:${run.run_id}`, "attempt")).toBe("2");
    } finally {
      await server.close();
    }
  });
});
