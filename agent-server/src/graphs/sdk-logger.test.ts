import { Writable } from "node:stream";
import { getLogger } from "@langchain/langgraph-sdk/logging";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { registerSdkLogger, whileLoadingGraph } from "./sdk-logger.ts";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: "trace" },
    new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split("\n")) if (line.trim()) lines.push(JSON.parse(line));
        done();
      },
    }),
  );
  return { logger, lines };
}

describe("the SDK's getLogger()", () => {
  it("logs winston-style calls through pino, levels mapped by severity", () => {
    const { logger, lines } = capture();
    registerSdkLogger(logger);
    const sdk = getLogger();
    sdk.info("plain");
    sdk.warn("with meta", { user: "ada" }, { step: 2 });
    sdk.error({ message: "as object", code: 7 });
    sdk.silly("very fine");
    sdk.http("request").verbose("chained");
    sdk.error(new Error("boom"));
    expect(lines.map(({ level, msg }) => [level, msg])).toEqual([
      [30, "plain"],
      [40, "with meta"],
      [50, "as object"],
      [10, "very fine"],
      [20, "request"],
      [20, "chained"],
      [50, "boom"],
    ]);
    expect(lines[1]).toMatchObject({ user: "ada", step: 2 });
    expect(lines[2]).toMatchObject({ code: 7 });
    expect(lines[6]).toMatchObject({ err: { message: "boom" } });
  });

  it("binds the id of the graph whose module is loading", async () => {
    const { logger, lines } = capture();
    registerSdkLogger(logger);
    await whileLoadingGraph("agent", async () => {
      await Promise.resolve();
      getLogger().info("loading");
    });
    getLogger().info("outside");
    expect(lines[0]).toMatchObject({ msg: "loading", graph_id: "agent" });
    expect(lines[1]).not.toHaveProperty("graph_id");
  });
});
