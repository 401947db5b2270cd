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
