import { jsonContains } from "../storage/json-match.ts";
import type { Cron, CronFilter, CronSearch } from "./schemas.ts";

/** A due firing: the cron and the slot (epoch ms) it is due for. */
export interface DueSlot {
  cronId: string;
  slot: number;
}

/** Who claims a slot, and until when (epoch ms) the claim holds without an acknowledgement. */
export interface SlotLease {
  owner: string;
  now: number;
  until: number;
}

/**
 * Crons plus their schedule: a set of enabled crons by next run time, and the slots in flight.
 * Replicas race on `claim`: exactly one wins a due slot and holds it under a lease until it
 * acknowledges the slot's run with `ack`, which moves the cron to its next slot. A slot whose
 * lease ran out unacknowledged (its owner died) is due again, for any process to claim.
 */
export interface CronStore {
  /** Stores the cron and (re)schedules it at `next_run_date` (unscheduled when null), dropping any slot in flight. */
  save(cron: Cron): Promise<void>;
  /** `save` of a cron that still exists; false (nothing written) once it was deleted. */
  update(cron: Cron): Promise<boolean>;
  get(cronId: string): Promise<Cron | undefined>;
  delete(cronId: string): Promise<boolean>;
  /** Every cron (searches filter and sort them). */
  all(): Promise<Cron[]>;
  /** Slots due at `now`: those whose claim expired, then scheduled ones earliest first. */
  due(now: number, limit: number): Promise<DueSlot[]>;
  /**
   * Puts the slot in flight under `lease`: a scheduled slot the cron is still at, or one whose
   * earlier claim expired. False when another process holds or already acknowledged it.
   */
  claim(cronId: string, slot: number, lease: SlotLease): Promise<boolean>;
  /**
   * The slot's run exists: moves the cron to `next` (null: unschedule) and ends the claim. False
   * when the slot is no longer in flight (acknowledged by another process, or the cron was saved or deleted).
   */
  ack(cronId: string, slot: number, next: number | null): Promise<boolean>;
}

export function matchesCronFilter(cron: Cron, filter: CronFilter): boolean {
  if (filter.assistant_id !== undefined && cron.assistant_id !== filter.assistant_id) return false;
  if (filter.thread_id !== undefined && cron.thread_id !== filter.thread_id) return false;
  if (filter.enabled !== undefined && cron.enabled !== filter.enabled) return false;
  return filter.metadata === undefined || jsonContains(cron.metadata, filter.metadata);
}

/** Filter, sort (nulls last), page and project (pure). */
export function searchCrons(crons: Cron[], search: CronSearch): Partial<Cron>[] {
  const sortBy = search.sort_by ?? "created_at";
  const direction = (search.sort_order ?? "desc") === "asc" ? 1 : -1;
  const offset = search.offset ?? 0;
  const page = crons
    .filter((cron) => matchesCronFilter(cron, search))
    .sort((a, b) => {
      const x = a[sortBy];
      const y = b[sortBy];
      if (x === y) return a.cron_id < b.cron_id ? -direction : direction;
      if (x === null) return 1;
      if (y === null) return -1;
      return x < y ? -direction : direction;
    })
    .slice(offset, offset + (search.limit ?? 10));
  const select = search.select;
  if (!select) return page;
  return page.map((cron) => Object.fromEntries(select.map((field) => [field, cron[field]])));
}
