import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ContainerLogServer, podLogPath, serveContainerLogs, timestampLines } from "./container-logs.ts";

const dir = mkdtempSync(join(tmpdir(), "container-logs-"));
const now = Date.now();
const at = (secondsAgo: number) => new Date(now - secondsAgo * 1000).toISOString();
let server: ContainerLogServer;

beforeAll(async () => {
  writeFileSync(
    podLogPath(dir, "agent-1"),
    `${at(30)} first\n${at(20)} second line\n${at(10)} third\n${at(1)} fourth\n`,
  );
  server = await serveContainerLogs(dir, (namespace, pod) =>
    namespace === "agents" && pod === "agent-1" ? "agent-server" : undefined,
  );
});
afterAll(() => server?.close());

const get = async (path: string) => {
  const response = await fetch(`http://127.0.0.1:${server.port}${path}`);
  return { status: response.status, text: await response.text() };
};
const logs = (query = "") => get(`/containerLogs/agents/agent-1/agent-server${query}`);

describe("containerLogs", () => {
  it("returns the output without timestamps unless asked", async () => {
    expect(await logs()).toEqual({ status: 200, text: "first\nsecond line\nthird\nfourth\n" });
    expect((await logs("?timestamps=true")).text).toBe(readFileSync(podLogPath(dir, "agent-1"), "utf8"));
  });

  it("applies sinceTime, sinceSeconds, tailLines and limitBytes", async () => {
    expect((await logs(`?sinceTime=${at(15)}`)).text).toBe("third\nfourth\n");
    expect((await logs("?sinceSeconds=5")).text).toBe("fourth\n");
    expect((await logs("?tailLines=2")).text).toBe("third\nfourth\n");
    expect((await logs("?tailLines=0")).text).toBe("");
    expect((await logs("?limitBytes=8")).text).toBe("first\nse");
  });

  it("answers 404 for a pod or container this node does not run", async () => {
    expect((await get("/containerLogs/agents/agent-2/agent-server")).status).toBe(404);
    expect((await get("/containerLogs/agents/agent-1/sidecar")).status).toBe(404);
    expect((await get("/containerLogs/other/agent-1/agent-server")).status).toBe(404);
  });
});

describe("timestampLines", () => {
  it("writes each complete line with its time, and a last unterminated one at the end", async () => {
    const file = join(dir, "stream.log");
    const stream = new PassThrough();
    timestampLines(stream, file);
    stream.write("one\ntw");
    stream.write("o\nthree");
    stream.end();
    await new Promise((resolve) => stream.on("end", resolve));
    const lines = readFileSync(file, "utf8").trimEnd().split("\n");
    expect(lines.map((line) => line.slice(line.indexOf(" ") + 1))).toEqual(["one", "two", "three"]);
    for (const line of lines) expect(Date.parse(line.slice(0, line.indexOf(" ")))).toBeGreaterThanOrEqual(now);
  });
});
