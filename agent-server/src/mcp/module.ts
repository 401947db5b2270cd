import { type AnyRoute, defineRoute } from "@agentplane/common";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { ErrorRequestHandler, Response } from "express";
import type { ServerModule } from "../app.ts";
import type { AssistantService } from "../assistants/service.ts";
import type { ServerContext } from "../context.ts";
import { requestAuth } from "../custom-auth/module.ts";
import { readHttpSection } from "../http/section.ts";
import type { RunService } from "../runs/service.ts";
import { createMcpServer } from "./server.ts";

const tag = "MCP";

/** A JSON-RPC error object answered outside the MCP transport (parse errors, unsupported methods). */
export function sendJsonRpcError(res: Response, status: number, code: number, message: string): void {
  res.status(status).json({ jsonrpc: "2.0", id: null, error: { code, message } });
}

/** Bodies that are not JSON get JSON-RPC's parse error instead of the API's 422. */
export function jsonRpcParseErrors(pathPrefix: string): ErrorRequestHandler {
  return (error, req, res, next) => {
    const parseFailed = (error as { type?: string }).type === "entity.parse.failed";
    if (parseFailed && req.path.startsWith(pathPrefix)) sendJsonRpcError(res, 400, -32700, "Parse error");
    else next(error);
  };
}

function mcpRoutes(ctx: ServerContext, runs: () => RunService, assistants: () => AssistantService): AnyRoute[] {
  const notAllowed = (method: "get" | "delete"): AnyRoute =>
    defineRoute({
      method,
      path: "/mcp",
      operationId: `mcp_${method}`,
      tag,
      summary: "Not supported: the MCP endpoint is stateless (no sessions, no server-initiated stream)",
      errors: [405],
      handler: ({ res }) => {
        res.set("Allow", "POST");
        sendJsonRpcError(res, 405, -32000, "Method not allowed.");
      },
    });
  return [
    defineRoute({
      method: "post",
      path: "/mcp",
      operationId: "mcp_post",
      tag,
      summary: "MCP streamable-HTTP endpoint (stateless): each assistant is a tool that runs its graph",
      handler: async ({ req, res }) => {
        const server = createMcpServer(ctx, runs(), assistants(), requestAuth(req));
        const transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: undefined,
          enableJsonResponse: true,
        });
        res.once("close", () => {
          void transport.close();
          void server.close();
        });
        await server.connect(transport);
        await transport.handleRequest(req, res, req.body);
      },
    }),
    notAllowed("get"),
    notAllowed("delete"),
  ];
}

/** `/mcp`, unless `langgraph.json` sets `http.disable_mcp`. */
export function mcpModule(runs: () => RunService, assistants: () => AssistantService): ServerModule {
  return {
    name: "mcp",
    routes: (ctx) => (readHttpSection(ctx.config.configPath).disable_mcp ? [] : mcpRoutes(ctx, runs, assistants)),
    observe: () => ({ error: jsonRpcParseErrors("/mcp") }),
  };
}
