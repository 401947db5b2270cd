import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl, uniquePrefix } from "../../../testing/redis.ts";
import { type ExtensionTestServer, startExtensionServer } from "../long-term-store/testing/server.ts";

const clientScript = new URL("./testing/client.ts", import.meta.url).pathname;

interface ToolResult {
  isError?: boolean;
  content: unknown[];
  structuredContent?: Record<string, unknown>;
}

interface McpSession {
  tools: { name: string; description?: string; inputSchema: { type: string; properties?: Record<string, unknown> } }[];
  results: ToolResult[];
}

/** The official MCP SDK client (Client + StreamableHTTPClientTransport), in a child process. */
async function mcpClient(url: string, calls: { name: string; arguments: Record<string, unknown> }[] = []) {
  const { stdout } = await promisify(execFile)(process.execPath, [clientScript, `${url}/mcp`, JSON.stringify(calls)]);
  return JSON.parse(stdout) as McpSession;
}

describe("MCP endpoint", () => {
  let app: ExtensionTestServer;

  beforeAll(async () => {
    app = await startExtensionServer(testRedisUrl(), { prefix: uniquePrefix("mcp") });
  });
  afterAll(() => app?.close());

  it("lists every assistant as a tool with the graph's description and input schema", async () => {
    const { tools } = await mcpClient(app.url);
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
    expect(Object.keys(byName).sort()).toEqual(["adder", "agent", "approval", "memory", "sleeper"]);
    expect(byName.adder?.description).toBe("Adds two numbers");
    expect(byName.adder?.inputSchema).toMatchObject({ type: "object", properties: { a: {}, b: {} } });
    expect(byName.agent?.inputSchema.properties).toHaveProperty("messages");
  });

  it("runs the graph when a tool is called and returns its output (unknown tools are tool errors)", async () => {
    const { results } = await mcpClient(app.url, [
      { name: "adder", arguments: { a: 40, b: 2 } },
      { name: "agent", arguments: { messages: [{ role: "user", content: "hi" }] } },
      { name: "nope", arguments: {} },
    ]);
    const [result, agent, unknown] = results as [ToolResult, ToolResult, ToolResult];
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ sum: 42 });
    expect(unknown.isError).toBe(true);
    expect(JSON.stringify(agent.content)).toContain("You said: hi");
    // stateless runs leave no thread behind
    expect(await app.client.threads.search({ metadata: { graph_id: "adder" } })).toEqual([]);
  });

  it("answers malformed JSON-RPC with protocol error objects, never a 5xx", async () => {
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    const post = (body: string, extra: Record<string, string> = {}) =>
      fetch(`${app.url}/mcp`, { method: "POST", headers: { ...headers, ...extra }, body });
    const parse = await post("{not json");
    expect(parse.status).toBe(400);
    expect(await parse.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32700 } });
    const envelope = await post(JSON.stringify({ hello: "world" }));
    expect(envelope.status).toBeLessThan(500);
    expect(await envelope.json()).toMatchObject({ jsonrpc: "2.0", error: { code: expect.any(Number) } });
    const method = await post(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "no/such/method" }));
    expect(method.status).toBeLessThan(500);
    const methodBody = await method.text();
    expect(methodBody).toContain("-32601");
    const accept = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }), { accept: "text/html" });
    expect(accept.status).toBe(406);
    const get = await fetch(`${app.url}/mcp`);
    expect(get.status).toBe(405);
    expect(await get.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 } });
  });
});
