import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// Two projects: `unit` (beside the code, the bench's included; no child processes; `make test-unit`, under a minute) and
// `integration` (`*.integration.test.ts` beside the code: servers, processes, clusters; and `test/`,
// the cross-component suites). `make test` runs both.
const shared = {
  globalSetup: ["testing/global-setup.ts"],
  testTimeout: 30_000,
  hookTimeout: 60_000,
};
const ignored = ["**/node_modules/**", "**/dist/**"];
/**
 * Test files run at once. Vitest's default is one less than the cores, which leaves a 2-core CI
 * machine one worker: the suite then takes half again as long, because most integration files wait
 * on child processes, Redis and timers rather than using their core. Two on 2 cores, the default
 * (cores − 1) above that; docs/testing.md#how-many-files-run-at-once.
 */
const cores = availableParallelism();
const maxWorkers = Math.min(cores, Math.max(2, cores - 1));

export default defineConfig({
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"], externalConditions: ["source"] } },
  test: {
    maxWorkers,
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          // One module graph per worker: importing LangGraph and the SDK once, not once per file, halves the run.
          isolate: false,
          include: ["*/src/**/*.test.ts", "testing/**/*.test.ts", "bench/**/*.test.ts"],
          exclude: [...ignored, "**/*.integration.test.ts"],
          ...shared,
        },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["**/*.integration.test.ts", "test/**/*.test.ts"],
          exclude: ignored,
          ...shared,
        },
      },
    ],
  },
});
