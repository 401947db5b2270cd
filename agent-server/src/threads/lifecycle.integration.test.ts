import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { testRedisUrl } from "../../../testing/redis.ts";
import { type ServerProcess, spawnServer } from "../runs/testing/process.ts";
import { type RunTestServer, startRunServer } from "../runs/testing/server.ts";
import { eventually, waitForStatus, waitForSteps } from "../runs/testing/wait.ts";

/** A thread's life across processes: what deleting it or rolling back its run leaves, with real process deaths. */

const processes: ServerProcess[] = [];
const servers: RunTestServer[] = [];
afterEach(async () => {
  await Promise.all(processes.splice(0).map((process) => process.kill()));
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

interface StepsValues {
  done: string[];
}

describe("thread lifecycle across processes", () => {
  it("a rollback of a run whose worker was killed removes the run and its checkpoints", async () => {
    const prefix = `lifecycle-${randomUUID().slice(0, 8)}:`;
    const doomed = await spawnServer(testRedisUrl(), prefix, { N_WORKERS: "1" });
    processes.push(doomed);
    const thread = await doomed.client.threads.create();
    await doomed.client.runs.wait(thread.thread_id, "steps", { input: { steps: 1, label: "kept" } });
    const before = await doomed.client.threads.getHistory(thread.thread_id, { limit: 100 });
    // Claimed at once by the only worker, the one about to die; several checkpoints in before the kill.
    const run = await doomed.client.runs.create(thread.thread_id, "steps", {
      input: { steps: 20, delay_ms: 200, label: "doomed" },
    });
    await waitForSteps(doomed.client, thread.thread_id, "doomed", 2, 10_000);
    await doomed.kill();
    // A live process sweeps the dead worker's lease (one worker, so it runs the sweep).
    const live = await startRunServer(testRedisUrl(), { prefix, workers: 1 });
    servers.push(live);
    await live.client.runs.cancel(thread.thread_id, run.run_id, false, "rollback");
    const gone = await eventually(
      () =>
        live.client.runs.get(thread.thread_id, run.run_id).then(
          () => false,
          () => true,
        ),
      (deleted) => deleted,
    );
    expect(gone).toBe(true);
    const after = await live.client.threads.getHistory(thread.thread_id, { limit: 100 });
    expect(after.map((state) => state.checkpoint.checkpoint_id)).toEqual(
      before.map((state) => state.checkpoint.checkpoint_id),
    );
    expect(after.some((state) => state.metadata?.run_id === run.run_id)).toBe(false);
    const state = await live.client.threads.getState<StepsValues>(thread.thread_id);
    expect(state.values.done).toEqual(["kept:1"]);
    expect((await live.client.threads.get(thread.thread_id)).status).toBe("idle");
  }, 60_000);

  it("deleting an assistant with delete_threads stops and deletes its threads' runs too", async () => {
    const server = await startRunServer(testRedisUrl(), { workers: 1 });
    servers.push(server);
    const { client } = server;
    const assistant = await client.assistants.create({ graphId: "steps" });
    const thread = await client.threads.create();
    const running = await client.runs.create(thread.thread_id, assistant.assistant_id, {
      input: { steps: 1, delay_ms: 60_000, label: "long" },
    });
    await waitForStatus(client, thread.thread_id, running.run_id, "running", 10_000);
    const pending = await client.runs.create(thread.thread_id, assistant.assistant_id, {
      input: { steps: 1, label: "queued" },
    });
    const started = Date.now();
    const response = await fetch(`${server.url}/assistants/${assistant.assistant_id}?delete_threads=true`, {
      method: "DELETE",
    });
    expect(response.status).toBeLessThan(300);
    await expect(client.threads.get(thread.thread_id)).rejects.toMatchObject({ status: 404 });
    // The running run is stopped within a second wherever it executes; the pending one never starts.
    const runsLeft = async () => {
      const store = server.runs.service();
      return (await Promise.all([store.find(running.run_id), store.find(pending.run_id)])).filter(Boolean).length;
    };
    expect(await eventually(runsLeft, (left) => left === 0, 10_000)).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((await server.runs.service().inflightCounts()).running).toBe(0);
  }, 60_000);
});
