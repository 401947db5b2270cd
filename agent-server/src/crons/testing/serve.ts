/**
 * `agent-server serve` for the cron replica tests: the same flags and environment, with a crons
 * module that also accepts 6-field schedules (a leading seconds field, so a slot is due every
 * second) and, when CRON_HARNESS_CRASH_AFTER is `claim` or `run`, SIGKILLs this process right
 * after that step of the first firing it owns.
 */
import { loadConfig } from "../../config.ts";
import { defaultModules, startAgentServer } from "../../server.ts";
import type { FiringStep } from "../scheduler.ts";

const crashAfter = process.env.CRON_HARNESS_CRASH_AFTER as FiringStep | undefined;
if (crashAfter !== undefined && crashAfter !== "claim" && crashAfter !== "run") {
  throw new Error(`CRON_HARNESS_CRASH_AFTER must be claim or run, not ${crashAfter}`);
}

const server = await startAgentServer(loadConfig(process.argv.slice(2)), {
  modules: defaultModules({
    crons: {
      scheduleRules: { fields: [5, 6] },
      onStep: (step) => {
        if (step === crashAfter) process.kill(process.pid, "SIGKILL");
      },
    },
  }),
});
process.stdout.write(`Agent server: ${server.url}\n`);
process.once("SIGTERM", () => {
  server.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
