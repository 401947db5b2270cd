import { defineConfig } from "vitest/config";

// Two projects: `unit` (beside the code, no child processes; `make test-unit`, under a minute) and
// `integration` (`*.integration.test.ts` beside the code: servers, processes, clusters; and `test/`,
// the cross-component suites). `make test` runs both.
const shared = {
  globalSetup: ["testing/global-setup.ts"],
  testTimeout: 30_000,
  hookTimeout: 60_000,
};
const ignored = ["**/node_modules/**", "**/dist/**"];

export default defineConfig({
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"], externalConditions: ["source"] } },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          // One module graph per worker: importing LangGraph and the SDK once, not once per file, halves the run.
          isolate: false,
          include: ["*/src/**/*.test.ts", "testing/**/*.test.ts"],
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
