import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl } from "../../../testing/redis.ts";
import { type ServerProcess, spawnServer } from "./testing/process.ts";
import { waitForStatus, waitForSteps } from "./testing/wait.ts";

/** Two (or more) agent-server processes sharing one Redis: any of them serves any run. */

const processes: ServerProcess[] = [];

async function start(prefix: string, env: Record<string, string> = {}) {
  const server = await spawnServer(testRedisUrl(), prefix, env);
  processes.push(server);
  return server;
}

// Each describe below holds one test: its processes die right after it.
afterEach(async () => {
  await Promise.all(processes.splice(0).map((server) => server.kill()));
});
afterAll(async () => {
  await Promise.all(processes.map((server) => server.kill()));
});

interface StepsValues {
  done: string[];
  pids: number[];
}

async function collect(stream: AsyncIterable<unknown>) {
  const items: { event: string; data: unknown; id?: string }[] = [];
  for await (const item of stream) items.push(item as { event: string; data: unknown });
  return items;
}

const newPrefix = () => `replicas-${randomUUID().slice(0, 8)}:`;

// Each scenario has its own describe so the processes it starts with are started in a hook: a
// start costs about 3 CPU-s, which under load took most of a test's 30 s.
describe("replicas on one Redis", () => {
  describe("an API process and a worker process", () => {
    let api: ServerProcess;
    let worker: ServerProcess;
    beforeAll(async () => {
      const prefix = newPrefix();
      api = await start(prefix, { N_WORKERS: "0" });
      worker = await start(prefix, { N_WORKERS: "2" });
    });

    it("streams, joins and cancels through one process a run executing on the other", async () => {
      const thread = await api.client.threads.create();
      const run = await api.client.runs.create(thread.thread_id, "steps", {
        input: { steps: 3, delay_ms: 150, label: "x" },
        streamMode: ["values", "updates"],
      });
      const streamed = await collect(api.client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" }));
      expect(streamed[0]).toMatchObject({ event: "metadata", data: { run_id: run.run_id, attempt: 1 } });
      expect(streamed.filter((e) => e.event === "updates").length).toBe(3);
      const joined = (await worker.client.runs.join(thread.thread_id, run.run_id)) as unknown as StepsValues;
      expect(joined.done).toEqual(["x:1", "x:2", "x:3"]);
      expect(new Set(joined.pids)).toEqual(new Set([worker.pid]));

      const waited = (await api.client.runs.wait(thread.thread_id, "agent", {
        input: { messages: [{ role: "human", content: "across processes" }] },
      })) as { messages: { content: string }[] };
      expect(waited.messages.at(-1)?.content).toBe("You said: across processes");
      // A conversation long enough that the answering process keeps what it reads (lists of 1 KiB
      // and more): every answer is the thread's state as either process reads it.
      for (let turn = 0; turn < 6; turn++) {
        const content = `turn ${turn}: ${'a longer question with "quotes", [brackets] and {braces}. '.repeat(3)}`;
        const answer = await api.client.runs.wait(thread.thread_id, "agent", {
          input: { messages: [{ role: "human", content }] },
        });
        expect(answer).toEqual((await worker.client.threads.getState(thread.thread_id)).values);
        expect(answer).toEqual((await api.client.threads.getState(thread.thread_id)).values);
        expect((answer as typeof waited).messages.at(-1)?.content).toBe(`You said: ${content}`);
      }

      const slow = await api.client.runs.create(thread.thread_id, "steps", { input: { steps: 1, delay_ms: 60_000 } });
      await waitForStatus(api.client, thread.thread_id, slow.run_id, "running", 10_000);
      const started = Date.now();
      await api.client.runs.cancel(thread.thread_id, slow.run_id, true);
      expect(Date.now() - started).toBeLessThan(1000);
      expect((await worker.client.runs.get(thread.thread_id, slow.run_id)).status).toBe("interrupted");
    });
  });

  describe("a process killed mid-run", () => {
    let prefix: string;
    let doomed: ServerProcess;
    beforeAll(async () => {
      prefix = newPrefix();
      doomed = await start(prefix, { N_WORKERS: "1" });
    });

    // The survivor starts within the test (after the kill), so its start is part of the scenario.
    it("takes over the run of a process killed with SIGKILL and finishes it from the last checkpoint", async () => {
      const thread = await doomed.client.threads.create();
      const run = await doomed.client.runs.create(thread.thread_id, "steps", {
        input: { steps: 6, delay_ms: 400, label: "k" },
      });
      // Two steps done (checkpointed) on the doomed process before it dies.
      await waitForSteps(doomed.client, thread.thread_id, "k", 2, 10_000);
      await doomed.kill();
      const survivor = await start(prefix, { N_WORKERS: "1" });

      // Joined while the killed attempt's events are the log: they come, then attempt 2's marker.
      const live = await collect(survivor.client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" }));
      const attempts = (items: typeof live) =>
        items.filter((e) => e.event === "metadata").map((e) => (e.data as { attempt: number }).attempt);
      // (Only [2] when the survivor claimed the run before this join reached it.)
      expect([[1, 2], [2]]).toContainEqual(attempts(live));
      // Joined afterwards (from the start, or resumed at an id of the dropped attempt): the
      // killed attempt's events were dropped when the retry started, only attempt 2's remain.
      const events = await collect(
        survivor.client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" }),
      );
      expect(attempts(events)).toEqual([2]);
      expect(events[0]).toMatchObject({ event: "metadata", data: { attempt: 2 } });
      expect(events.map((e) => e.id)).toEqual(
        live.slice(live.findLastIndex((e) => e.event === "metadata")).map((e) => e.id),
      );
      const resumed = await collect(
        survivor.client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "0" }),
      );
      expect(resumed.map((e) => e.id)).toEqual(events.map((e) => e.id));
      const finished = await survivor.client.runs.get(thread.thread_id, run.run_id);
      expect(finished.status).toBe("success");
      const state = await survivor.client.threads.getState<StepsValues>(thread.thread_id);
      expect(state.values.done).toEqual(["k:1", "k:2", "k:3", "k:4", "k:5", "k:6"]);
      expect(state.values.pids.slice(0, 2)).toEqual([doomed.pid, doomed.pid]);
      expect(state.values.pids.at(-1)).toBe(survivor.pid);
      expect((await survivor.client.threads.get(thread.thread_id)).status).toBe("idle");
    });
  });
});
