import { z } from "zod";
import type { ServerContext } from "../context.ts";
import { readProjectSection } from "../graphs/project.ts";
import { MINUTE_MS, TtlMinutesSchema } from "../schemas/common.ts";
import type { Thread, ThreadTtlPolicy } from "../storage/types.ts";
import type { ThreadService } from "./service.ts";

/**
 * Thread TTLs: a thread with a TTL that sees no write (run, state update, patch) for that many
 * minutes is deleted with its checkpoints and runs (`delete`), or loses every checkpoint but its
 * latest (`keep_latest`). A sweeper on every replica applies them, each to the record it read (compare-and-set).
 */

/** Minutes between sweeps unless `checkpointer.ttl.sweep_interval_minutes` says otherwise. */
const DEFAULT_SWEEP_MINUTES = 5;
/** Node's timers hold at most 2^31 - 1 ms (24.8 days); longer ones fire at once. */
const MAX_SWEEP_MINUTES = Math.floor((2 ** 31 - 1) / MINUTE_MS);
/** Threads handled per store query, so one sweep never holds a huge id list. */
const SWEEP_BATCH = 100;

export const ThreadTtlStrategySchema = z.enum(["delete", "keep_latest"]);

export const ThreadTtlSchema = z.object({
  strategy: ThreadTtlStrategySchema.default("delete"),
  ttl: TtlMinutesSchema,
});

/** `checkpointer.ttl` in `langgraph.json`: the deployment's default TTL and the sweep interval. */
const CheckpointerSection = z.object({
  ttl: z
    .object({
      strategy: ThreadTtlStrategySchema.default("delete"),
      sweep_interval_minutes: z.number().positive().max(MAX_SWEEP_MINUTES).optional(),
      default_ttl: TtlMinutesSchema.nullish(),
    })
    .optional(),
});

export interface ThreadTtlSettings {
  /** TTL of threads created without one; undefined: they never expire. */
  defaultTtl?: ThreadTtlPolicy;
  sweepIntervalMs: number;
}

export function readThreadTtlSettings(configPath: string): ThreadTtlSettings {
  const { ttl } = readProjectSection(configPath, "checkpointer", CheckpointerSection);
  return {
    ...(ttl?.default_ttl != null && { defaultTtl: { strategy: ttl.strategy, ttl: ttl.default_ttl } }),
    sweepIntervalMs: (ttl?.sweep_interval_minutes ?? DEFAULT_SWEEP_MINUTES) * MINUTE_MS,
  };
}

/** A thread as the API shows it: its TTL only when asked for (`?include=ttl`). */
export function threadView(thread: Thread, includeTtl = false): Thread {
  if (includeTtl || thread.ttl === undefined) return thread;
  const { ttl: _hidden, ...rest } = thread;
  return rest;
}

/**
 * Applies expired TTLs every `sweepIntervalMs`, deleting threads the way `DELETE /threads/{id}`
 * does (runs included). Threads with a pending or running run are left alone: the run's writes
 * are activity, so their TTL starts again.
 */
export class ThreadTtlSweeper {
  readonly #ctx: ServerContext;
  readonly #threads: ThreadService;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<unknown> | undefined;

  constructor(ctx: ServerContext, threads: ThreadService) {
    this.#ctx = ctx;
    this.#threads = threads;
  }

  start(intervalMs: number): void {
    this.#timer = setInterval(() => {
      this.#sweeping ??= this.sweep()
        .catch((err) => this.#ctx.logger.error({ err }, "sweeping expired threads failed"))
        .finally(() => {
          this.#sweeping = undefined;
        });
    }, intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#sweeping;
  }

  /** Applies every TTL expired by now; returns how many threads it deleted or pruned. */
  async sweep(now = new Date()): Promise<number> {
    const { threads } = this.#ctx.storage;
    let applied = 0;
    const skipped = new Set<string>();
    for (;;) {
      const ids = (await threads.expired(now, SWEEP_BATCH + skipped.size)).filter((id) => !skipped.has(id));
      if (ids.length === 0) return applied;
      for (const threadId of ids) {
        const thread = await threads.get(threadId);
        const expiresAt = thread?.ttl?.expires_at;
        // Written since it was listed (activity), or busy with a run: not expired after all.
        if (!thread || !expiresAt || Date.parse(expiresAt) > now.getTime() || thread.status === "busy") {
          skipped.add(threadId);
          continue;
        }
        // Written meanwhile, or another replica's sweep got there first: count and log only what
        // this one did to the thread as it was read.
        if (!(await this.#apply(thread))) continue;
        applied++;
        this.#ctx.logger.info({ thread_id: threadId, strategy: thread.ttl?.strategy }, "thread TTL expired");
      }
    }
  }

  /** Deletes or prunes an expired thread, unless it changed since it was read. */
  async #apply(thread: Thread): Promise<boolean> {
    if (thread.ttl?.strategy !== "keep_latest") return this.#threads.remove(thread.thread_id, thread);
    // Marked first, so a thread written meanwhile keeps its history.
    if (!(await this.#ctx.storage.threads.updateIfUnchanged(thread, { ttl_applied: true }))) return false;
    await this.#ctx.storage.checkpointer.pruneThread(thread.thread_id);
    return true;
  }
}
