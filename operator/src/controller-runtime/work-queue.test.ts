import { describe, expect, it, vi } from "vitest";
import { WorkQueue } from "./work-queue.ts";

const options = { workers: 4, baseDelayMs: 5, maxDelayMs: 40 };
const until = (condition: () => boolean) => vi.waitUntil(condition, { timeout: 5_000, interval: 1 });

/** Handlers block on `opened` until the test calls `open()`: work that lasts exactly as long as the test needs. */
function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe("WorkQueue", () => {
  it("hands a key to one worker at a time and re-runs it once if it changed meanwhile", async () => {
    let running = 0;
    let maxConcurrent = 0;
    const runs: string[] = [];
    const work = gate();
    const queue = new WorkQueue(async (key) => {
      running++;
      maxConcurrent = Math.max(maxConcurrent, running);
      runs.push(key);
      await work.opened;
      running--;
      return undefined;
    }, options);
    queue.start();
    queue.add("a");
    await until(() => runs.length === 1);
    for (let i = 0; i < 10; i++) queue.add("a");
    work.open();
    await queue.idle();
    expect(maxConcurrent).toBe(1);
    expect(runs).toEqual(["a", "a"]);
  });

  it("de-duplicates keys queued before a worker picks them", async () => {
    const runs: string[] = [];
    const queue = new WorkQueue(async (key) => {
      runs.push(key);
      return undefined;
    }, options);
    for (const key of ["a", "b", "a", "c", "b"]) queue.add(key);
    queue.start();
    await queue.idle();
    expect(runs.sort()).toEqual(["a", "b", "c"]);
  });

  it("runs different keys in parallel up to the worker count", async () => {
    let running = 0;
    let maxConcurrent = 0;
    const work = gate();
    const queue = new WorkQueue(async () => {
      running++;
      maxConcurrent = Math.max(maxConcurrent, running);
      await work.opened;
      running--;
      return undefined;
    }, options);
    queue.start();
    for (let i = 0; i < 10; i++) queue.add(`k${i}`);
    await until(() => running === 4);
    expect(queue.depth).toBe(6);
    work.open();
    await queue.idle();
    expect(maxConcurrent).toBe(4);
  });

  it("retries failures with exponential backoff per key and resets it after a success", async () => {
    const times: number[] = [];
    const errors: number[] = [];
    const queue = new WorkQueue(
      async () => {
        times.push(Date.now());
        if (times.length < 4) throw new Error("boom");
        return undefined;
      },
      options,
      (_key, _error, retryInMs) => errors.push(retryInMs),
    );
    queue.start();
    queue.add("a");
    await until(() => times.length === 4);
    await queue.idle();
    expect(errors).toEqual([5, 10, 20]);
    expect(queue.backoffFor("a")).toBe(5);
  });

  it("caps the backoff", async () => {
    let runs = 0;
    const queue = new WorkQueue(async () => {
      runs++;
      throw new Error("always");
    }, options);
    queue.start();
    queue.add("a");
    await until(() => runs >= 6);
    expect(queue.backoffFor("a")).toBe(40);
    await queue.stop();
  });

  it("requeues after the delay a handler asks for", async () => {
    const times: number[] = [];
    const queue = new WorkQueue(async () => {
      times.push(performance.now());
      return times.length === 1 ? { requeueAfterMs: 30 } : undefined;
    }, options);
    queue.start();
    queue.add("a");
    await until(() => times.length === 2);
    await queue.stop();
    // A timer never fires early (a busy machine only makes it late); 1 ms for rounding.
    expect((times[1] as number) - (times[0] as number)).toBeGreaterThanOrEqual(29);
  });

  it("keeps the earliest pending delay of a key", async () => {
    const runs: string[] = [];
    const queue = new WorkQueue(async (key) => {
      runs.push(key);
      return undefined;
    }, options);
    queue.start();
    queue.addAfter("a", 10);
    queue.addAfter("a", 60_000);
    queue.addAfter("b", 60_000);
    queue.addAfter("b", 10);
    await until(() => runs.length === 2);
    expect(runs.sort()).toEqual(["a", "b"]);
    await queue.stop();
  });
});
