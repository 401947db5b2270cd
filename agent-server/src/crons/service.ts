import { HttpError, notFound } from "@agentplane/common";
import { v4 as uuidv4, v5 as uuidv5 } from "uuid";
import { resolveAssistantId } from "../assistants/resolve.ts";
import type { AssistantService } from "../assistants/service.ts";
import type { ServerContext } from "../context.ts";
import {
  type AuthEvent,
  authConfigurable,
  authorize,
  matchesAuthFilter,
  type RequestAuth,
} from "../custom-auth/authorize.ts";
import type { RunService } from "../runs/service.ts";
import { mergeMetadata } from "../schemas/common.ts";
import type { JsonObject } from "../storage/types.ts";
import { nextRunAfter, ScheduleError, type ScheduleRules, validateSchedule, validateTimezone } from "./schedule.ts";
import {
  type Cron,
  type CronCreate,
  type CronFilter,
  type CronPatch,
  type CronSearch,
  RUN_PAYLOAD_FIELDS,
} from "./schemas.ts";
import { type CronStore, matchesCronFilter, searchCrons } from "./store.ts";

const invalid = (field: string, error: ScheduleError) =>
  new HttpError(422, [{ loc: ["body", field], msg: error.message, type: "value_error" }]);

function checkSchedule(schedule: string, timezone: string | null, rules: ScheduleRules): void {
  try {
    validateSchedule(schedule, rules);
  } catch (error) {
    if (error instanceof ScheduleError) throw invalid("schedule", error);
    throw error;
  }
  if (timezone === null) return;
  try {
    validateTimezone(timezone);
  } catch (error) {
    if (error instanceof ScheduleError) throw invalid("timezone", error);
    throw error;
  }
}

/** The run settings given in a request, without the cron's own fields (pure). */
function runPayload(body: Partial<CronCreate> | CronPatch): JsonObject {
  const payload: JsonObject = {};
  for (const field of RUN_PAYLOAD_FIELDS) {
    if (body[field] !== undefined) payload[field] = body[field];
  }
  return payload;
}

/** Namespace of the run ids of cron slots (a fixed random UUID). */
const CRON_RUN_NAMESPACE = "5f0b6a52-3c1e-4d7a-9a43-2b8e0f6c9d17";

/** The id of the run of one slot of a cron: the same in every process, so a slot has one run (pure). */
export function cronRunId(cronId: string, slot: number): string {
  return uuidv5(`${cronId}@${new Date(slot).toISOString()}`, CRON_RUN_NAMESPACE);
}

/** When an enabled cron next fires after `afterMs`; null when disabled or past its end (pure). */
export function scheduledNext(cron: Cron, afterMs: number): string | null {
  if (!cron.enabled) return null;
  const next = nextRunAfter(cron.schedule, cron.timezone, afterMs, cron.end_time);
  return next === null ? null : new Date(next).toISOString();
}

/** The services crons go through for the state others own: runs and their threads, assistants. */
export interface CronDependencies {
  runs: () => RunService;
  assistants: () => AssistantService;
}

/** Creating, changing and firing crons; the scheduler decides when, this decides what. */
export class CronService {
  readonly #ctx: ServerContext;
  readonly #store: CronStore;
  readonly #runs: () => RunService;
  readonly #assistants: () => AssistantService;
  readonly #rules: ScheduleRules;

  constructor(ctx: ServerContext, store: CronStore, { runs, assistants }: CronDependencies, rules: ScheduleRules) {
    this.#ctx = ctx;
    this.#store = store;
    this.#runs = runs;
    this.#assistants = assistants;
    this.#rules = rules;
  }

  /** Where the scheduler claims and acknowledges slots. */
  get store(): CronStore {
    return this.#store;
  }

  /** Filtered, sorted, paged and projected as the search asks. */
  async search(search: CronSearch, auth?: RequestAuth): Promise<Partial<Cron>[]> {
    const { assistant_id, thread_id, limit, offset } = search;
    const visible = await this.#visible(auth, { assistant_id, thread_id, limit, offset });
    return searchCrons(visible, this.#byAssistantId(search));
  }

  async count(filter: CronFilter, auth?: RequestAuth): Promise<number> {
    const resolved = this.#byAssistantId(filter);
    const { assistant_id, thread_id } = filter;
    const visible = await this.#visible(auth, { assistant_id, thread_id, limit: 0, offset: 0 });
    return visible.filter((cron) => matchesCronFilter(cron, resolved)).length;
  }

  /** Every cron whose metadata matches `auth`'s filter for `crons:search`. */
  async #visible(auth: RequestAuth | undefined, value: object): Promise<Cron[]> {
    const filter = await authorize(auth, "crons:search", value);
    return (await this.#store.all()).filter((cron) => matchesAuthFilter(cron.metadata, filter));
  }

  /** Crons store the assistant id that create resolved a graph id to: a filter names it the same way. */
  #byAssistantId<F extends CronFilter>(filter: F): F {
    if (filter.assistant_id === undefined) return filter;
    return { ...filter, assistant_id: resolveAssistantId(this.#ctx, filter.assistant_id) };
  }

  /**
   * With `auth`, `crons:create` may refuse the cron or stamp its metadata; a thread cron needs a
   * thread the user can read; the cron's runs act as the user who created it.
   */
  async create(threadId: string | undefined, body: CronCreate, auth?: RequestAuth): Promise<Cron> {
    const timezone = body.timezone ?? null;
    checkSchedule(body.schedule, timezone, this.#rules);
    // A graph id names its default assistant, which its owner re-creates when it went missing.
    const assistant = await this.#assistants().find(body.assistant_id);
    if (!assistant) throw notFound(`No assistant found for "${body.assistant_id}"`);
    const value = {
      payload: runPayload(body),
      schedule: body.schedule,
      thread_id: threadId,
      user_id: auth?.user.identity,
      end_time: body.end_time,
      metadata: { ...body.metadata },
    };
    await authorize(auth, "crons:create", value);
    // The thread, through its owner: 404 when unknown or not the user's to read.
    if (threadId !== undefined) await this.#runs().thread(threadId, auth);
    if (auth) {
      const config = (body.config ?? {}) as JsonObject;
      const configurable = { ...(config.configurable as JsonObject | undefined), ...authConfigurable(auth) };
      body = { ...body, metadata: value.metadata, config: { ...config, configurable } };
    }
    const now = new Date().toISOString();
    const cron: Cron = {
      cron_id: uuidv4(),
      assistant_id: assistant.assistant_id,
      thread_id: threadId ?? null,
      on_run_completed: threadId === undefined ? (body.on_run_completed ?? "delete") : null,
      end_time: body.end_time ?? null,
      schedule: body.schedule,
      timezone,
      created_at: now,
      updated_at: now,
      payload: runPayload(body),
      user_id: auth?.user.identity ?? null,
      next_run_date: null,
      metadata: body.metadata ?? {},
      enabled: body.enabled ?? true,
    };
    cron.next_run_date = scheduledNext(cron, Date.now());
    await this.#store.save(cron);
    return cron;
  }

  /** 404 when unknown, or when `auth`'s handler for `event` filters it out. */
  async get(cronId: string, auth?: RequestAuth, event: AuthEvent = "crons:read", value?: object): Promise<Cron> {
    const filter = await authorize(auth, event, value ?? { cron_id: cronId });
    const cron = await this.#store.get(cronId);
    if (!cron || !matchesAuthFilter(cron.metadata, filter)) throw notFound(`Cron ${cronId} not found`);
    return cron;
  }

  /** Payload fields replace, metadata merges, `end_time: null` clears; the next run is recomputed. */
  async patch(cronId: string, patch: CronPatch, auth?: RequestAuth): Promise<Cron> {
    const value = { cron_id: cronId, payload: runPayload(patch), schedule: patch.schedule, metadata: patch.metadata };
    const cron = await this.get(cronId, auth, "crons:update", value);
    if (auth) {
      // A new config keeps the creator's user for the cron's runs (the patcher's: the same owner).
      const config = patch.config && {
        ...patch.config,
        configurable: { ...patch.config.configurable, ...authConfigurable(auth) },
      };
      patch = { ...patch, metadata: value.metadata, ...(config && { config }) };
    }
    const timezone = patch.timezone ?? cron.timezone;
    const schedule = patch.schedule ?? cron.schedule;
    checkSchedule(schedule, timezone, this.#rules);
    const updated: Cron = {
      ...cron,
      schedule,
      timezone,
      end_time: patch.end_time === undefined ? cron.end_time : patch.end_time,
      enabled: patch.enabled ?? cron.enabled,
      on_run_completed:
        cron.thread_id === null ? (patch.on_run_completed ?? cron.on_run_completed) : cron.on_run_completed,
      payload: { ...cron.payload, ...runPayload(patch) },
      metadata: mergeMetadata(cron.metadata, patch.metadata ?? {}),
      updated_at: new Date().toISOString(),
    };
    updated.next_run_date = scheduledNext(updated, Date.now());
    // Only while it exists: a DELETE that came in between stands.
    if (!(await this.#store.update(updated))) throw notFound(`Cron ${cronId} not found`);
    return updated;
  }

  async delete(cronId: string, auth?: RequestAuth): Promise<void> {
    if (auth) await this.get(cronId, auth, "crons:delete");
    if (!(await this.#store.delete(cronId))) throw notFound(`Cron ${cronId} not found`);
  }

  /** Deletes every cron of `threadId` (the thread was deleted); `fire` deletes one created meanwhile. */
  async deleteThreadCrons(threadId: string): Promise<void> {
    const crons = (await this.#store.all()).filter((cron) => cron.thread_id === threadId);
    await Promise.all(crons.map((cron) => this.#store.delete(cron.cron_id)));
  }

  /**
   * Starts the run of one claimed slot: on the cron's thread (multitask per payload, default
   * enqueue), or on a new thread that is deleted afterwards unless `on_run_completed: keep`.
   * The run id is `cronRunId(cron, slot)`, and creating it again is a no-op: a slot taken over
   * from a process that died still has one run. A thread cron whose thread is gone is deleted.
   */
  async fire(cron: Cron, slot: number): Promise<void> {
    const payload = cron.payload as Omit<CronCreate, "schedule">;
    const metadata = { ...cron.metadata, cron_id: cron.cron_id, cron_slot: new Date(slot).toISOString() };
    const once = { runId: cronRunId(cron.cron_id, slot) };
    const runs = this.#runs();
    if (cron.thread_id === null) {
      const run = await runs.create(
        undefined,
        {
          ...payload,
          assistant_id: cron.assistant_id,
          metadata,
          on_completion: cron.on_run_completed ?? "delete",
        },
        {},
        once,
      );
      this.#ctx.logger.debug({ cron_id: cron.cron_id, run_id: run.run_id }, "cron fired");
      return;
    }
    if (!(await runs.findThread(cron.thread_id))) {
      this.#ctx.logger.warn({ cron_id: cron.cron_id }, "the cron's thread was deleted: deleting the cron");
      await this.#store.delete(cron.cron_id);
      return;
    }
    const run = await runs.create(
      cron.thread_id,
      {
        ...payload,
        assistant_id: cron.assistant_id,
        metadata,
        multitask_strategy: payload.multitask_strategy ?? "enqueue",
      },
      {},
      once,
    );
    this.#ctx.logger.debug({ cron_id: cron.cron_id, run_id: run.run_id }, "cron fired");
  }
}
