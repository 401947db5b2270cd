import type { Cron } from "./schemas.ts";
import type { CronStore, DueSlot, SlotLease } from "./store.ts";

interface Claim {
  slot: number;
  owner: string;
  until: number;
}

/** Crons in process memory (`agent-server dev`): the Redis store's claim rules, in one process. */
export class MemoryCronStore implements CronStore {
  readonly #crons = new Map<string, Cron>();
  readonly #schedule = new Map<string, number>();
  readonly #claims = new Map<string, Claim>();

  async save(cron: Cron): Promise<void> {
    this.#crons.set(cron.cron_id, structuredClone(cron));
    this.#claims.delete(cron.cron_id);
    if (cron.next_run_date === null) this.#schedule.delete(cron.cron_id);
    else this.#schedule.set(cron.cron_id, Date.parse(cron.next_run_date));
  }

  async update(cron: Cron): Promise<boolean> {
    if (!this.#crons.has(cron.cron_id)) return false;
    await this.save(cron);
    return true;
  }

  async get(cronId: string): Promise<Cron | undefined> {
    const cron = this.#crons.get(cronId);
    return cron && structuredClone(cron);
  }

  async delete(cronId: string): Promise<boolean> {
    this.#schedule.delete(cronId);
    this.#claims.delete(cronId);
    return this.#crons.delete(cronId);
  }

  async all(): Promise<Cron[]> {
    return [...this.#crons.values()].map((cron) => structuredClone(cron));
  }

  async due(now: number, limit: number): Promise<DueSlot[]> {
    const retried = [...this.#claims]
      .filter(([, claim]) => claim.until <= now)
      .sort((a, b) => a[1].until - b[1].until)
      .map(([cronId, { slot }]) => ({ cronId, slot }));
    const scheduled = [...this.#schedule]
      .filter(([, slot]) => slot <= now)
      .sort((a, b) => a[1] - b[1])
      .map(([cronId, slot]) => ({ cronId, slot }));
    return [...retried, ...scheduled].slice(0, limit);
  }

  async claim(cronId: string, slot: number, { owner, now, until }: SlotLease): Promise<boolean> {
    if (!this.#crons.has(cronId)) return false;
    const held = this.#claims.get(cronId);
    if (held) {
      if (held.slot !== slot || held.until > now) return false;
    } else {
      if (this.#schedule.get(cronId) !== slot) return false;
      this.#schedule.delete(cronId);
    }
    this.#claims.set(cronId, { slot, owner, until });
    return true;
  }

  async ack(cronId: string, slot: number, next: number | null): Promise<boolean> {
    const cron = this.#crons.get(cronId);
    if (!cron || this.#claims.get(cronId)?.slot !== slot) return false;
    this.#claims.delete(cronId);
    if (next !== null) this.#schedule.set(cronId, next);
    cron.next_run_date = next === null ? null : new Date(next).toISOString();
    return true;
  }
}
