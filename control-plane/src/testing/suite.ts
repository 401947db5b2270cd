import { afterAll, beforeAll } from "vitest";
import { type Harness, startHarness } from "./harness.ts";
import { OperatorStandIn } from "./operator-stand-in.ts";

export interface StartedHarness {
  h: Harness;
  operator: OperatorStandIn;
}

/**
 * Starts a harness and an operator stand-in on its cluster for the calling test file, handing
 * them to `onStart` once they run, and closes the harness after the file's tests.
 */
export function useHarness(onStart: (started: StartedHarness) => void): void {
  let h: Harness | undefined;
  beforeAll(async () => {
    h = await startHarness();
    onStart({ h, operator: new OperatorStandIn(h.cluster.custom) });
  });
  afterAll(() => h?.close());
}
