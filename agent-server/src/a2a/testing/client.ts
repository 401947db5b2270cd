import { Role, type SendMessageRequest } from "@a2a-js/sdk";
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";

/**
 * The official A2A client (`@a2a-js/sdk` ClientFactory, which picks its v0.3 JSON-RPC transport
 * from the agent card) against `argv[2]` (server URL) and assistant `argv[3]`: send, get, stream.
 * Prints what it received as JSON. A separate process, like the MCP test client, so vitest's
 * `source` export condition does not apply to the SDK's dependencies.
 */
const [baseUrl, assistant] = process.argv.slice(2) as [string, string];
const legacyCompat = { enabled: true };
const cardResolver = new DefaultAgentCardResolver({ legacyCompat });
const card = await cardResolver.resolve(baseUrl, `.well-known/agent-card.json?assistant_id=${assistant}`);
const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ legacyCompat })], cardResolver });
const client = await factory.createFromAgentCard(card);
const message = (text: string, contextId = "") => ({
  messageId: crypto.randomUUID(),
  contextId,
  taskId: "",
  role: Role.ROLE_USER,
  parts: [
    { content: { $case: "text" as const, value: text }, metadata: undefined, filename: "", mediaType: "text/plain" },
  ],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});
const request = (text: string, contextId?: string): SendMessageRequest => ({
  tenant: "",
  message: message(text, contextId),
  configuration: undefined,
  metadata: undefined,
});
const sent = await client.sendMessage(request("hello from the SDK"));
const contextId = (sent as { contextId?: string }).contextId;
const fetched = await client.getTask({ tenant: "", id: (sent as { id: string }).id });
const streamed = [];
for await (const event of client.sendMessageStream(request("streamed", contextId))) streamed.push(event);
process.stdout.write(JSON.stringify({ card, sent, fetched, streamed }));
