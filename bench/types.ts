/** One measured figure, printed by `bench/run.ts`. */
export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  /** The goal, e.g. `>= 3000` or `<= 20`; compared against `value` in the report. */
  target?: string;
}

/** Every `bench/<area>.ts` exports `run`; it gets a Redis of its own to fill and must clean up what it starts. */
export interface BenchModule {
  run(redisUrl: string): Promise<BenchResult[]>;
}
