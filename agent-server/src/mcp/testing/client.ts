import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

/**
 * Runs the official MCP client against `argv[2]` (the /mcp URL): lists the tools, then calls
 * each `{name, arguments}` of the JSON array `argv[3]`; prints `{tools, results}` as JSON.
 * A separate process because vitest's `source` export condition would load the SDK's
 * eventsource-parser dependency from its TypeScript sources.
 */
const [url, calls] = process.argv.slice(2) as [string, string];
const client = new Client({ name: "agentplane-mcp-test", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const { tools } = await client.listTools();
const results = [];
for (const call of JSON.parse(calls) as { name: string; arguments: Record<string, unknown> }[]) {
  results.push(await client.callTool(call));
}
await client.close();
process.stdout.write(JSON.stringify({ tools, results }));
