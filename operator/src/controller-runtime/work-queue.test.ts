import { describe, expect, it } from "vitest";
import { WorkQueue } from "./work-queue.ts";

const options = { workers: 4, baseDelayMs: 5, maxDelayMs: 40 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("WorkQueue", () => {
  it("hands a key to one worker at a time and re-runs it once if it changed meanwhile", async () => {
    let running = 0;
    let maxConcurrent = 0;
    const runs: string[] = [];
    const queue = new WorkQueue(async (key) => {
      running++;
      maxConcurrent = Math.max(maxConcurrent, running);
      runs.push(key);
      await sleep(20);
      running--;
      return undefined;
    }, options);
    queue.start();
    queue.add("a");
    await sleep(5);
    for (let i = 0; i < 10; i++) queue.add("a");
    await sleep(5);
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
    const queue = new WorkQueue(async () => {
      running++;
      maxConcurrent = Math.max(maxConcurrent, running);
      await sleep(15);
      running--;
      return undefined;
    }, options);
    queue.start();
    for (let i = 0; i < 10; i++) queue.add(`k${i}`);
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
    while (times.length < 4) await sleep(5);
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
    while (runs < 6) await sleep(5);
    expect(queue.backoffFor("a")).toBe(40);
    await queue.stop();
  });

  it("requeues after the delay a handler asks for, keeping the earliest pending delay", async () => {
    let runs = 0;
    const queue = new WorkQueue(async () => {
      runs++;
      return runs === 1 ? { requeueAfterMs: 30 } : undefined;
    }, options);
    queue.start();
    queue.add("a");
    await sleep(10);
    expect(runs).toBe(1);
    await sleep(50);
    expect(runs).toBe(2);
    await queue.stop();
  });
});
