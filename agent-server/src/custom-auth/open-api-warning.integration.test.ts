import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { fixtureConfig, startTestServer } from "../graphs/testing/server.ts";

const fixture = new URL("./testing/project/", import.meta.url).pathname;
const project = `${fixture}langgraph.json`;
const OPEN_WARNING = /the API is open to anyone/;

/** What a server logs while it starts (and stops) with this `langgraph.json` and no API keys. */
async function startupLog(configPath: string): Promise<{ level: number; msg: string }[]> {
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const server = await startTestServer(configPath, { logger: pino({ level: "info" }, sink) });
  await server.close();
  return lines;
}

/** A project whose `Auth` has handlers but no `authenticate` (checked by shape, so no SDK import). */
function projectWithoutAuthenticate(): string {
  const dir = mkdtempSync(join(tmpdir(), "custom-auth-no-authenticate-"));
  writeFileSync(join(dir, "auth.mjs"), 'export const auth = { "~handlerCache": { callbacks: {} } };\n');
  writeFileSync(
    join(dir, "langgraph.json"),
    JSON.stringify({ graphs: { whoami: `${fixture}src/whoami.ts:graph` }, auth: { path: "./auth.mjs:auth" } }),
  );
  return join(dir, "langgraph.json");
}

describe("the start-up warning about an open API", () => {
  it("is not given when custom auth authenticates every request, which the log says instead", async () => {
    const log = await startupLog(project);
    expect(log.filter((line) => OPEN_WARNING.test(line.msg))).toEqual([]);
    expect(log).toContainEqual(
      expect.objectContaining({ level: 30, msg: expect.stringMatching(/authenticated by the project's auth/) }),
    );
  }, 60_000);

  it("is given without API keys and custom auth, or with an Auth that authenticates nobody", async () => {
    for (const configPath of [fixtureConfig, projectWithoutAuthenticate()]) {
      const warnings = (await startupLog(configPath)).filter((line) => OPEN_WARNING.test(line.msg));
      expect(warnings).toEqual([expect.objectContaining({ level: 40 })]);
    }
  }, 60_000);
});
