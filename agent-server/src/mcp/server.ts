import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { AssistantService } from "../assistants/service.ts";
import type { ServerContext } from "../context.ts";
import type { RequestAuth } from "../custom-auth/authorize.ts";
import type { RunService } from "../runs/service.ts";
import { serverVersion } from "../system/versions.ts";
import { assistantTools, runAndWait } from "./tools.ts";

const text = (value: unknown): CallToolResult["content"] => [{ type: "text", text: JSON.stringify(value) }];

/**
 * An MCP server whose tools are the deployment's assistants; one per request (stateless
 * transport), acting as the request's user under custom auth.
 */
export function createMcpServer(
  ctx: ServerContext,
  runs: RunService,
  assistants: AssistantService,
  auth?: RequestAuth,
): Server {
  const server = new Server(
    { name: "agentplane-agent-server", version: serverVersion() },
    { capabilities: { tools: {} } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: (await assistantTools(ctx, assistants, auth)).map(({ name, description, inputSchema }) => ({
      name,
      description,
      inputSchema,
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = (await assistantTools(ctx, assistants, auth)).find(
      (candidate) => candidate.name === request.params.name,
    );
    if (!tool) return { isError: true, content: text(`Unknown tool ${request.params.name}`) };
    const outcome = await runAndWait(
      runs,
      tool.assistant.assistant_id,
      request.params.arguments ?? {},
      extra.signal,
      auth,
    );
    if (!outcome) return { isError: true, content: text("The run did not finish") };
    if (outcome.error) return { isError: true, content: text(outcome.error) };
    const values = outcome.values ?? null;
    const structured = values !== null && typeof values === "object" && !Array.isArray(values);
    return {
      content: text(values),
      ...(structured && { structuredContent: values as Record<string, unknown> }),
    };
  });
  return server;
}
