import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { HttpError, type Logger } from "@agentplane/common";
import { nextRunAfter } from "./schedule.ts";
import type { Cron } from "./schemas.ts";
import type { CronService } from "./service.ts";

/** The steps of a firing this process owns: the slot is claimed, then its run is started. */
export type FiringStep = "claim" | "run";

export interface SchedulerOptions {
  /** How often due crons are looked for (CRON_TICK_MS). */
  tickMs: number;
  /** A slot more than this late (the scheduler was down) is skipped: one late firing, not a backlog. */
  misfireGraceMs: number;
  /** How long a claimed slot waits for its acknowledgement before any process may claim it again (CRON_CLAIM_LEASE_MS). */
  leaseMs: number;
  /** Injectable clock (epoch ms) for tests. */
  now?: () => number;
  /** Told about every failure after it is logged (metrics). */
  onError?: (error: unknown) => void;
  /** Told whether each claim of a due slot was won (metrics). */
  onClaim?: (won: boolean) => void;
  /** Told after each step of a firing this process owns (the crash harness stops the process there). */
  onStep?: (step: FiringStep) => void;
}

/** Slots looked at per tick; the rest wait for the next tick. */
const BATCH = 100;

/**
 * Runs in every process. Each tick reads the due slots and claims each one atomically under a
 * lease, starts the slot's run under an id derived from the cron and the slot, and then
 * acknowledges the slot, which moves the cron to its next one. A process that dies in between
 * leaves its slot in flight: once the lease ends another process claims it and creates the same
 * run id, which is a no-op if the run was created before the crash.
 */
export class CronScheduler {
  readonly #service: CronService;
  readonly #logger: Logger;
  readonly #options: SchedulerOptions;
  readonly #now: () => number;
  readonly #owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = true;

  constructor(service: CronService, logger: Logger, options: SchedulerOptions) {
    this.#service = service;
    this.#logger = logger;
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  start(): void {
    this.#stopped = false;
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.tick()
        .catch((error: unknown) => {
          this.#logger.error({ err: error }, "cron scheduler tick failed");
          this.#options.onError?.(error);
        })
        .finally(() => this.#schedule());
    }, this.#options.tickMs);
  }

  /** The slot after `slot`, or (past the grace period) the first one after now; null when the cron ends. */
  #following(schedule: string, timezone: string | null, endTime: string | null, slot: number, now: number) {
    const next = nextRunAfter(schedule, timezone, slot, endTime);
    if (next === null || next >= now - this.#options.misfireGraceMs) return next;
    return nextRunAfter(schedule, timezone, now, endTime);
  }

  /** Fires every slot due now that this process wins; returns how many it fired (their run exists, acknowledged). */
  async tick(): Promise<number> {
    const now = this.#now();
    const store = this.#service.store;
    let fired = 0;
    for (const { cronId, slot } of await store.due(now, BATCH)) {
      const cron = await store.get(cronId);
      const claimedAt = this.#now();
      const won = await store.claim(cronId, slot, {
        owner: this.#owner,
        now: claimedAt,
        until: claimedAt + this.#options.leaseMs,
      });
      if (cron?.enabled) this.#options.onClaim?.(won);
      if (!won) continue;
      if (!cron?.enabled) {
        await store.ack(cronId, slot, null);
        continue;
      }
      this.#options.onStep?.("claim");
      if (await this.#fire(cron, slot)) fired++;
    }
    return fired;
  }

  /**
   * Starts the run of a claimed slot and acknowledges the slot. A refused run (4xx: assistant
   * gone, thread busy with `reject`) is given up; any other failure leaves the slot in flight,
   * so it is tried again when the lease ends.
   */
  async #fire(cron: Cron, slot: number): Promise<boolean> {
    let started = true;
    try {
      await this.#service.fire(cron, slot);
    } catch (error) {
      this.#logger.error({ err: error, cron_id: cron.cron_id }, "starting a cron run failed");
      this.#options.onError?.(error);
      if (!(error instanceof HttpError)) return false;
      started = false;
    }
    this.#options.onStep?.("run");
    const next = this.#following(cron.schedule, cron.timezone, cron.end_time, slot, this.#now());
    await this.#service.store.ack(cron.cron_id, slot, next);
    return started;
  }
}
