import type { Thread } from "../storage/types.ts";
import { END_EVENT, type LoggedEvent } from "../stream/event-log.ts";
import { valuesParsedWhenRead } from "../stream/references.ts";
import type { RunBackend } from "./queue/backend.ts";
import type { Run } from "./schemas.ts";
import type { RunOutcome } from "./worker/settle.ts";

/** Gone, or in a final status. */
export const isFinished = (run: Run | undefined) => !run || (run.status !== "pending" && run.status !== "running");

/**
 * Waits at most `idleMs` for `settled`: its value, `idle` when the time ran out first, or
 * `aborted` when `signal` fired first.
 */
async function waitAtMost<T>(
  settled: Promise<T>,
  signal: AbortSignal,
  idleMs: number,
): Promise<{ value: T } | "idle" | "aborted"> {
  if (signal.aborted) return "aborted";
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    return await Promise.race([
      settled.then((value) => ({ value })),
      new Promise<"idle">((resolve) => {
        timer = setTimeout(() => resolve("idle"), idleMs);
      }),
      new Promise<"aborted">((resolve) => {
        onAbort = () => resolve("aborted");
        signal.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}

/**
 * A closing entry as the outcome it records. Values a materialising log read from their
 * checkpoint (a long conversation) stay the JSON they are, parsed only if something reads them.
 */
function outcomeOf({ data, valuesAt }: LoggedEvent): RunOutcome {
  if (valuesAt === undefined) return JSON.parse(data) as RunOutcome;
  const outcome = JSON.parse(`${data.slice(0, valuesAt)}null}`) as RunOutcome;
  // Text, not a buffer: V8 collects the whole heap per ~64 MB of new buffers, and this one is the state.
  const valuesJson = data.slice(valuesAt, -1);
  return valuesParsedWhenRead<RunOutcome>({ ...outcome, values: undefined, valuesJson }, valuesJson);
}

export interface OutcomeSources {
  backend: RunBackend;
  /** The outcome of the run when it executes in this process (awaited in memory). */
  local: Promise<RunOutcome | undefined> | undefined;
  /** The run's thread, for the values of a run that ended without a readable log. */
  thread: () => Promise<Thread | undefined>;
}

/**
 * Resolves with the run's outcome once it ends. Calls `onIdle` after each `idleMs` of silence
 * (for keep-alive bytes). Runs that ended without a log entry answer from their record.
 */
export async function awaitOutcome(
  run: Run,
  { backend, local, thread }: OutcomeSources,
  { signal, idleMs, onIdle }: { signal: AbortSignal; idleMs: number; onIdle?: () => void },
): Promise<RunOutcome | undefined> {
  // A run executing in this process is awaited here: no subscription, no reading of its log.
  while (local) {
    const waited = await waitAtMost(local, signal, idleMs);
    if (waited === "aborted") return undefined;
    if (waited === "idle") {
      onIdle?.();
      continue;
    }
    if (waited.value) return waited.value;
    // The execution here ended without settling the run (lease lost, shutdown): its log tells the rest.
    break;
  }
  const { events, store } = backend;
  // Answers from the record when the run ended without a readable log (expired, never executed).
  const fromRecord = async (current: Run | undefined): Promise<RunOutcome> => {
    if (!current) return { status: "deleted", values: null };
    return { status: current.status, values: (await thread())?.values ?? null };
  };
  let wake: (() => void) | undefined;
  let ended = false;
  const unwatch = await events.watch(run.run_id, (closing) => {
    if (!closing) return;
    ended = true;
    wake?.();
  });
  try {
    while (!signal.aborted) {
      ended = false;
      const last = await events.last(run.run_id);
      if (last?.event === END_EVENT) return outcomeOf(last);
      if (!last && isFinished(run)) return fromRecord(run);
      if (ended) continue;
      const woken = new Promise<void>((resolve) => {
        wake = resolve;
      });
      const waited = await waitAtMost(woken, signal, idleMs);
      wake = undefined;
      if (waited !== "idle") continue;
      const current = await store.get(run.run_id);
      if (isFinished(current)) return fromRecord(current);
      onIdle?.();
    }
    return undefined;
  } finally {
    await unwatch();
  }
}
