import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, renameSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterEach, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { freePort } from "../../../testing/redis-server.ts";
import { waitUntil } from "../runs/testing/wait.ts";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const cli = "agent-server/src/cli/main.ts";
const exampleConfig = "agent-server/example/langgraph.json";
const KEY = "process-test-key";

interface Spawned {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

function spawnCli(args: string[], env: NodeJS.ProcessEnv = {}): Spawned {
  // --conditions=source runs the workspace sources directly, no build needed.
  const child = spawn(process.execPath, ["--conditions=source", cli, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  let err = "";
  child.stdout?.on("data", (chunk) => (out += chunk));
  child.stderr?.on("data", (chunk) => (err += chunk));
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exit };
}

async function startServe(env: NodeJS.ProcessEnv = {}): Promise<Spawned & { url: string }> {
  return startCli(["serve", "--config", exampleConfig], {
    REDIS_URI: testRedisUrl(),
    REDIS_PREFIX: uniquePrefix("process"),
    AGENTPLANE_API_KEYS: KEY,
    ...env,
  });
}

async function startCli(args: string[], env: NodeJS.ProcessEnv): Promise<Spawned & { url: string }> {
  const port = await freePort();
  const spawned = spawnCli([...args, "--port", String(port), "--host", "127.0.0.1"], env);
  const deadline = Date.now() + 30_000;
  while (!spawned.stdout().includes("API docs:")) {
    if (spawned.child.exitCode !== null) throw new Error(`server exited: ${spawned.stderr()}`);
    if (Date.now() > deadline) throw new Error(`server did not start: ${spawned.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const url = /Agent server: (\S+)/.exec(spawned.stdout())![1]!;
  return { ...spawned, url };
}

/** Structural OpenAPI 3.1 checks: unique operation ids, documented path parameters, resolvable refs, valid schemas. */
function openApiProblems(doc: any): string[] {
  const problems: string[] = [];
  if (doc.openapi !== "3.1.0") problems.push(`openapi is ${doc.openapi}`);
  const schemas: Record<string, object> = doc.components?.schemas ?? {};
  for (const [, ref] of JSON.stringify(doc).matchAll(/"\$ref":"([^"]+)"/g)) {
    if (!ref!.startsWith("#/components/schemas/") || !(ref!.slice(21) in schemas)) problems.push(`bad $ref ${ref}`);
  }
  const ids = new Set<string>();
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (!op.operationId || ids.has(op.operationId)) problems.push(`${method} ${path}: missing/duplicate operationId`);
      ids.add(op.operationId);
      if (Object.keys(op.responses ?? {}).length === 0) problems.push(`${method} ${path}: no responses`);
      for (const [, name] of path.matchAll(/\{([^}]+)\}/g)) {
        if (!op.parameters?.some((p: any) => p.in === "path" && p.name === name)) {
          problems.push(`${method} ${path}: path parameter ${name} undocumented`);
        }
      }
    }
  }
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  for (const id of Object.keys(schemas)) {
    try {
      ajv.compile({ $id: `urn:doc:${id}`, components: { schemas }, $ref: `#/components/schemas/${id}` });
    } catch (error) {
      problems.push(`schema ${id}: ${(error as Error).message}`);
    }
  }
  return problems;
}

describe("agent-server CLI (process)", () => {
  it("serves /ok, /info, a valid /openapi.json and /docs, with API keys enforced", async () => {
    const server = await startServe();
    expect(server.stdout()).toContain(`API docs:     ${server.url}/docs`);
    expect(await (await fetch(`${server.url}/ok`)).json()).toEqual({ ok: true });
    expect((await fetch(`${server.url}/info`)).status).toBe(401);
    const info = await fetch(`${server.url}/info`, { headers: { "x-api-key": KEY } });
    expect(info.status).toBe(200);
    expect(((await info.json()) as any).flags.assistants).toBe(true);

    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as any;
    expect(openApiProblems(doc)).toEqual([]);
    for (const path of ["/ok", "/info", "/threads/{thread_id}/state", "/assistants/{assistant_id}/graph"]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    const docs = await fetch(`${server.url}/docs`);
    expect(docs.headers.get("content-type")).toContain("text/html");
    expect(await docs.text()).toContain("swagger-ui");
    expect(server.stdout() + server.stderr()).not.toContain(KEY);

    server.child.kill("SIGTERM");
    expect(await server.exit).toBe(0);
  });

  it("finishes an in-flight request on SIGTERM, then exits cleanly", async () => {
    // At info level it says when shutdown starts.
    const server = await startServe({ LOG_LEVEL: "info" });
    const { hostname, port } = new URL(server.url);
    const body = JSON.stringify({ metadata: { purpose: "shutdown" } });
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          hostname,
          port,
          path: "/threads",
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": KEY, expect: "100-continue" },
        },
        (res) => {
          let text = "";
          res.on("data", (chunk) => (text += chunk));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on("error", reject);
      // The server asking for the body shows it has the request: signal it then, and send the body
      // once it says it is shutting down, so the request is in flight while shutdown starts.
      req.on("continue", () => {
        server.child.kill("SIGTERM");
        const shuttingDown = async () => server.stdout().includes("shutting down");
        waitUntil(shuttingDown, "the server starts shutting down", 10_000).then(() => req.end(body), reject);
      });
      req.flushHeaders();
    });
    const result = await response;
    expect(result.status).toBe(200);
    expect(JSON.parse(result.body).metadata).toEqual({ purpose: "shutdown" });
    expect(await server.exit).toBe(0);
    // Closed for new connections after shutdown.
    await expect(fetch(`${server.url}/ok`)).rejects.toThrow();
  });

  it("dev mode reloads a JavaScript graph when its file changes", async () => {
    const project = mkdtempSync(join(tmpdir(), "agentplane-dev-"));
    const langgraph = pathToFileURL(join(root, "node_modules/@langchain/langgraph/dist/index.js")).href;
    const writeGraph = (node: string, file = "graph.mjs") =>
      writeFileSync(
        join(project, file),
        `import { Annotation, START, StateGraph } from ${JSON.stringify(langgraph)};
const State = Annotation.Root({ n: Annotation() });
export const graph = new StateGraph(State).addNode(${JSON.stringify(node)}, () => ({ n: 1 })).addEdge(START, ${JSON.stringify(node)});
`,
      );
    writeGraph("first");
    writeFileSync(join(project, "langgraph.json"), JSON.stringify({ graphs: { g: "./graph.mjs:graph" } }));
    const server = await startCli(["dev", "--config", join(project, "langgraph.json")], {});
    const nodes = async () =>
      ((await (await fetch(`${server.url}/assistants/g/graph`)).json()) as any).nodes.map((n: any) => n.id);
    expect(await nodes()).toContain("first");
    const reloaded = async (node: string) => {
      const deadline = Date.now() + 20_000;
      while (!(await nodes()).includes(node)) {
        if (Date.now() > deadline) throw new Error(`graph not reloaded: ${server.stdout()}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    writeGraph("second");
    await reloaded("second");
    // An atomic save, as editors and `sed -i` do it: a temporary file renamed over the graph.
    writeGraph("third", ".graph.mjs.tmp");
    renameSync(join(project, ".graph.mjs.tmp"), join(project, "graph.mjs"));
    await reloaded("third");
    server.child.kill("SIGINT");
    expect(await server.exit).toBe(0);
  });

  it("--help names every command", async () => {
    const spawned = spawnCli(["--help"], {});
    expect(await spawned.exit).toBe(0);
    expect(spawned.stdout()).toMatch(/^Usage: agent-server <serve\|dev> /);
    for (const command of ["serve", "dev", "dockerfile", "build"]) {
      expect(spawned.stdout()).toMatch(new RegExp(`^  ${command} +\\S`, "m"));
    }
  });

  it.each([
    [["serve", "--config", exampleConfig], {}, /REDIS_URI is required/],
    [["serve", "--port", "x"], { REDIS_URI: "redis://127.0.0.1:1" }, /port must be a number/],
    [["launch"], {}, /expected command "serve", "dev", "dockerfile" or "build"/],
    [["dev", "--config", "nowhere/langgraph.json", "--port", "0"], {}, /cannot read .*nowhere\/langgraph.json/],
  ])("exits 2 with a one-line message for %j", async (args, env, message) => {
    const spawned = spawnCli(args, env);
    expect(await spawned.exit).toBe(2);
    const lines = spawned.stderr().trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^agent-server: /);
    expect(lines[0]).toMatch(message);
  });
});
