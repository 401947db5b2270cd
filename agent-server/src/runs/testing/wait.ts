import type { Client } from "@langchain/langgraph-sdk";

const pause = () => new Promise((resolve) => setTimeout(resolve, 25));

/** Polls until the run has `status`. */
export async function waitForStatus(client: Client, threadId: string, runId: string, status: string, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const run = await client.runs.get(threadId, runId);
    if (run.status === status) return run;
    await pause();
  }
  throw new Error(`run ${runId} did not reach ${status}`);
}

/** Polls until the thread's state holds `count` steps of the `steps` fixture graph whose label starts with `prefix`. */
export async function waitForSteps(client: Client, threadId: string, prefix: string, count: number, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const state = await client.threads.getState<{ done?: string[] }>(threadId);
    if ((state.values.done ?? []).filter((step) => step.startsWith(prefix)).length >= count) return;
    await pause();
  }
  throw new Error(`thread ${threadId} did not reach ${count} ${prefix} steps`);
}

/** Polls `check` until it returns true. */
export async function waitUntil(check: () => Promise<boolean>, what: string, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await pause();
  }
  throw new Error(`timed out waiting until ${what}`);
}

/** Reads until `accept` takes the value or `timeoutMs` passed, then returns the last value read (for the test to check). */
export async function eventually<T>(read: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
