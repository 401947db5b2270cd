/**
 * A map bounded by the total weight of its values (bytes, or 1 each to bound their number),
 * least recently used out first. The value just set always stays, even when it alone is over.
 */
export class LruCache<V> {
  readonly #entries = new Map<string, { value: V; weight: number }>();
  readonly #budget: number;
  readonly #weigh: (value: V) => number;
  #weight = 0;

  constructor(budget: number, weigh: (value: V) => number = () => 1) {
    this.#budget = budget;
    this.#weigh = weigh;
  }

  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V): void {
    this.delete(key);
    const weight = this.#weigh(value);
    this.#entries.set(key, { value, weight });
    this.#weight += weight;
    for (const [oldest, entry] of this.#entries) {
      if (this.#weight <= this.#budget || oldest === key) break;
      this.#entries.delete(oldest);
      this.#weight -= entry.weight;
    }
  }

  delete(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#weight -= entry.weight;
  }
}
