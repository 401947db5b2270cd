import type { RedisClient } from "../../storage/redis-client.ts";
import type { RedisScript } from "../../storage/redis-script.ts";
import { END_EVENT } from "../../stream/event-log.ts";
import { type CancelAction, CancelActionSchema, type Run, type RunStatus } from "../schemas.ts";
import { type ArchiveLimits, DEFAULT_ARCHIVE_LIMITS, RunArchive } from "./redis-archive.ts";
import { CANCEL, CLAIM, DELETE, ENQUEUE, FINISH, RENEW, SWEEP } from "./redis-scripts.ts";
import type {
  CancelOutcome,
  ClaimedRun,
  ClosingEvent,
  EnqueueOptions,
  EnqueueOutcome,
  ExpiredRun,
  RunListQuery,
  RunStore,
} from "./store.ts";

type StoredRun = Omit<Run, "status" | "updated_at">;

const nowIso = () => new Date().toISOString();

const ENQUEUE_OUTCOMES: Record<number, "queued" | "exists" | "no-thread"> = {
  1: "queued",
  2: "exists",
  4: "no-thread",
};

/** Run records and the run queue in Redis, shared by every agent-server process (see `redis-scripts.ts`). */
export class RedisRunStore implements RunStore {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #threadKey: ((threadId: string) => string) | undefined;
  readonly #archive: RunArchive;

  /** With `threadKey` (a thread's record key), runs are refused on threads that do not exist. */
  constructor(
    redis: RedisClient,
    prefix: string,
    threadKey?: (threadId: string) => string,
    archiveLimits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
  ) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#threadKey = threadKey;
    this.#archive = new RunArchive(redis, prefix, archiveLimits);
  }

  /** Channel names other parts of the run system subscribe to. */
  get channels() {
    return { wake: `${this.#prefix}wake`, cancel: `${this.#prefix}cancel` };
  }

  #eval(script: RedisScript, args: (string | number)[]): Promise<unknown> {
    return script.run(this.#redis, [], [this.#prefix, ...args.map(String)]);
  }

  async enqueue(run: Run, { startAt, rejectIfBusy, claimLeaseMs }: EnqueueOptions): Promise<EnqueueOutcome> {
    const { status: _status, updated_at, ...stored } = run;
    const now = Date.now();
    const claimNow = claimLeaseMs !== undefined && startAt <= now;
    const result = await this.#eval(ENQUEUE, [
      run.run_id,
      run.thread_id,
      JSON.stringify(stored),
      updated_at,
      claimNow ? now : startAt,
      rejectIfBusy ? 1 : 0,
      claimNow ? claimLeaseMs : 0,
      this.#threadKey?.(run.thread_id) ?? "",
    ]);
    if (result === 3) {
      const claimed = { run: { ...run, status: "running" as const }, attempt: 1, firstStartedAt: now, resumed: false };
      return { outcome: "claimed", claimed };
    }
    return { outcome: ENQUEUE_OUTCOMES[result as number] ?? "busy" };
  }

  async #load(runIds: string[]): Promise<Run[]> {
    if (runIds.length === 0) return [];
    const multi = this.#redis.multi();
    for (const runId of runIds) {
      multi.hmGet(`${this.#prefix}run:${runId}`, ["json", "status", "updated_at", "arc", "thread_id"]);
    }
    const replies = (await multi.execAsPipeline()) as unknown as (string | null)[][];
    const runs: Run[] = [];
    for (const [i, [stored, status, updatedAt, archive, threadId]] of replies.entries()) {
      // An old finished run keeps its record, and its update time, in its thread's archive.
      const json =
        stored ?? (archive && threadId && (await this.#archive.json(threadId, archive, runIds[i] as string)));
      if (!json || !status) continue;
      const run = JSON.parse(json) as StoredRun & { updated_at?: string };
      const updated = updatedAt ?? run.updated_at;
      if (updated) runs.push({ ...run, status: status as RunStatus, updated_at: updated });
    }
    return runs;
  }

  /** Archives the thread's old finished runs now (as finishing its runs does, in the background); false when there were too few. */
  archive(threadId: string): Promise<boolean> {
    return this.#archive.archive(threadId);
  }

  async get(runId: string): Promise<Run | undefined> {
    return (await this.#load([runId]))[0];
  }

  async list(threadId: string, { limit, offset, status }: RunListQuery): Promise<Run[]> {
    const key = `${this.#prefix}tr:${threadId}`;
    if (!status) {
      const recent = await this.#redis.zRange(key, offset, offset + limit - 1, { REV: true });
      if (recent.length === limit) return this.#load(recent);
      // Past the thread's recent runs: its archived ones, older than all of them.
      const skipped = Math.max(offset - (await this.#redis.zCard(key)), 0);
      const archived = (await this.#archive.ids(threadId)).slice(skipped, skipped + limit - recent.length);
      // A run archived between the two reads is in both.
      return this.#load([...new Set([...recent, ...archived])]);
    }
    const ids = [...(await this.#redis.zRange(key, 0, -1, { REV: true })), ...(await this.#archive.ids(threadId))];
    const all = await this.#load([...new Set(ids)]);
    return all.filter((run) => run.status === status).slice(offset, offset + limit);
  }

  async inflight(threadId: string): Promise<Run[]> {
    const [active, queued] = await Promise.all([
      this.#redis.get(`${this.#prefix}ta:${threadId}`),
      this.#redis.lRange(`${this.#prefix}tq:${threadId}`, 0, -1),
    ]);
    return this.#load(active ? [active, ...queued] : queued);
  }

  async allInflight(): Promise<Run[]> {
    return this.#load(await this.#redis.zRange(`${this.#prefix}inflight`, 0, -1));
  }

  /** Two ZCARDs: `inflight` holds pending and running runs, `leases` the running ones. */
  async inflightCounts(): Promise<{ pending: number; running: number }> {
    const [inflight, running] = await Promise.all([
      this.#redis.zCard(`${this.#prefix}inflight`),
      this.#redis.zCard(`${this.#prefix}leases`),
    ]);
    return { pending: Math.max(0, inflight - running), running };
  }

  queued(threadId: string): Promise<number> {
    return this.#redis.lLen(`${this.#prefix}tq:${threadId}`);
  }

  async delete(runId: string): Promise<"deleted" | "running" | "missing"> {
    const reply = (await this.#eval(DELETE, [runId])) as "deleted" | "running" | "missing" | [string, string, string];
    if (!Array.isArray(reply)) return reply;
    const [, archive, threadId] = reply;
    await this.#archive.forget(threadId, archive, runId);
    return "deleted";
  }

  async claim(leaseMs: number): Promise<{ claimed?: ClaimedRun; nextDueAt?: number }> {
    const reply = (await this.#eval(CLAIM, [Date.now(), leaseMs, nowIso()])) as
      | [string, number, string, string, number, string | null]
      | [null, string | null];
    if (reply[0] === null) return { nextDueAt: reply[1] === null ? undefined : Number(reply[1]) };
    const [, attempt, json, startedAt, resumed, nextDue] = reply;
    const run: Run = { ...(JSON.parse(json) as StoredRun), status: "running", updated_at: nowIso() };
    return {
      claimed: { run, attempt: Number(attempt), firstStartedAt: Number(startedAt), resumed: resumed === 1 },
      nextDueAt: nextDue === null ? undefined : Number(nextDue),
    };
  }

  async renew(runId: string, attempt: number, leaseMs: number): Promise<{ lost: boolean; cancel?: CancelAction }> {
    const reply = (await this.#eval(RENEW, [runId, attempt, Date.now() + leaseMs])) as string | null;
    if (reply === null) return { lost: true };
    const cancel = CancelActionSchema.safeParse(reply);
    return { lost: false, cancel: cancel.success ? cancel.data : undefined };
  }

  async finish(runId: string, attempt: number, status: RunStatus | "deleted", closing: ClosingEvent): Promise<boolean> {
    const temporary = closing.temporary ? 1 : 0;
    const args = [
      runId,
      attempt,
      status,
      nowIso(),
      Date.now(),
      0,
      END_EVENT,
      closing.data,
      closing.keepSeconds,
      temporary,
    ];
    const reply = (await this.#eval(FINISH, args)) as number | [number, string, number];
    if (!Array.isArray(reply)) return reply === 1;
    const [, threadId, unarchived] = reply;
    if (unarchived >= this.#archive.due) this.#archive.archiveSoon(threadId);
    return true;
  }

  async requeue(runId: string, attempt: number): Promise<void> {
    await this.#eval(FINISH, [runId, attempt, "pending", nowIso(), Date.now(), 1, "", "", 0, 0]);
  }

  async cancel(runId: string, action: CancelAction): Promise<CancelOutcome> {
    return (await this.#eval(CANCEL, [runId, action, nowIso()])) as CancelOutcome;
  }

  async sweepExpired(maxAttempts: number): Promise<ExpiredRun[]> {
    const flat = (await this.#eval(SWEEP, [Date.now(), maxAttempts, nowIso()])) as (string | number)[];
    const expired: ExpiredRun[] = [];
    for (let i = 0; i < flat.length; i += 4) {
      expired.push({
        runId: String(flat[i]),
        threadId: String(flat[i + 1]),
        outcome: flat[i + 2] as ExpiredRun["outcome"],
        attempt: Number(flat[i + 3]),
      });
    }
    return expired;
  }
}
