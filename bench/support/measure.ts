import { performance } from "node:perf_hooks";

/** Completed calls per second of `operation`, run by `concurrency` loops for `durationMs`. */
export async function measureThroughput(
  concurrency: number,
  durationMs: number,
  operation: (worker: number, iteration: number) => Promise<unknown>,
): Promise<number> {
  const start = performance.now();
  const deadline = start + durationMs;
  let completed = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      for (let i = 0; performance.now() < deadline; i++) {
        await operation(worker, i);
        completed++;
      }
    }),
  );
  return completed / ((performance.now() - start) / 1000);
}

/** Latencies in milliseconds of `samples` sequential calls, after `warmup` unmeasured ones. */
export async function measureLatencies(
  samples: number,
  operation: (iteration: number) => Promise<unknown>,
  warmup = 20,
): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await operation(i);
  const latencies: number[] = [];
  for (let i = 0; i < samples; i++) {
    const start = performance.now();
    await operation(i);
    latencies.push(performance.now() - start);
  }
  return latencies;
}

/** Nearest-rank percentile (`p` in 0..100). */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

export const round = (value: number, digits = 1): number => Number(value.toFixed(digits));

/** A pseudo-random generator in [0, 1) from a 32-bit seed (mulberry32): the same seed, the same draws. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * The `level` confidence interval of `statistic` over `samples`, by the percentile bootstrap:
 * the statistic of `resamples` samples of the same size drawn with replacement, and the
 * quantiles that leave `(1 − level) / 2` of them on each side. The draws are seeded, so the same
 * samples give the same interval.
 */
export function bootstrapInterval<T>(
  samples: readonly T[],
  statistic: (sample: readonly T[]) => number,
  level = 0.95,
  resamples = 2000,
): { low: number; high: number } {
  const random = seededRandom(samples.length);
  const values: number[] = [];
  for (let i = 0; i < resamples; i++) {
    const drawn = Array.from({ length: samples.length }, () => samples[Math.floor(random() * samples.length)] as T);
    values.push(statistic(drawn));
  }
  const tail = ((1 - level) / 2) * 100;
  return { low: percentile(values, tail), high: percentile(values, 100 - tail) };
}
