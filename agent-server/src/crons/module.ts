import type { ServerModule } from "../app.ts";
import type { ServerContext } from "../context.ts";
import { MemoryCronStore } from "./memory-store.ts";
import { RedisCronStore } from "./redis-store.ts";
import { cronRoutes } from "./routes.ts";
import { API_SCHEDULE_RULES, type ScheduleRules } from "./schedule.ts";
import { CronScheduler, type FiringStep } from "./scheduler.ts";
import { type CronDependencies, CronService } from "./service.ts";
import { type CronSettings, cronSettingsFromEnv } from "./settings.ts";

export interface CronsModuleOptions {
  settings?: CronSettings;
  /** Injectable scheduler clock (epoch ms) for tests. */
  now?: () => number;
  /** Told about scheduler failures (metrics count the Redis ones). */
  onError?: (error: unknown) => void;
  /** Told whether each claim of a due slot was won (metrics). */
  onClaim?: (won: boolean) => void;
  /** Told after each step of a firing this process owns (the crash harness stops the process there). */
  onStep?: (step: FiringStep) => void;
  /** Which schedules are accepted (default: the API's 5 fields; the harness adds seconds). */
  scheduleRules?: ScheduleRules;
}

export interface CronsModule extends ServerModule {
  /** Available once the module started. */
  service(): CronService;
  scheduler(): CronScheduler;
  /**
   * Deletes the crons of a thread that was deleted. A no-op while the module is stopped (a TTL
   * sweep during shutdown): such a cron is deleted when it next fires and finds no thread.
   */
  deleteThreadCrons(threadId: string): Promise<void>;
}

/**
 * Crons: their routes and this process's scheduler (every replica runs one; slots are claimed
 * atomically in Redis). `services`: the run service the crons start runs through, the assistant
 * service their assistants are read through.
 */
export function cronsModule(services: CronDependencies, options: CronsModuleOptions = {}): CronsModule {
  const settings = options.settings ?? cronSettingsFromEnv();
  let started: { service: CronService; scheduler: CronScheduler } | undefined;
  const get = () => {
    if (!started) throw new Error("the crons module has not started");
    return started;
  };
  return {
    name: "crons",
    service: () => get().service,
    scheduler: () => get().scheduler,
    deleteThreadCrons: async (threadId) => started?.service.deleteThreadCrons(threadId),
    async start(ctx: ServerContext) {
      const { storage } = ctx.config;
      const redis = ctx.storage.redis;
      const store =
        redis && storage.kind === "redis" ? new RedisCronStore(redis, storage.prefix) : new MemoryCronStore();
      const service = new CronService(ctx, store, services, options.scheduleRules ?? API_SCHEDULE_RULES);
      const scheduler = new CronScheduler(service, ctx.logger, {
        ...settings,
        now: options.now,
        onError: options.onError,
        onClaim: options.onClaim,
        onStep: options.onStep,
      });
      scheduler.start();
      started = { service, scheduler };
    },
    routes: () => cronRoutes(() => get().service),
    async stop() {
      if (!started) return;
      await started.scheduler.stop();
      started = undefined;
    },
  };
}
