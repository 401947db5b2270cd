import { Role, type SendMessageRequest } from "@a2a-js/sdk";
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";

/**
 * The official A2A client (`@a2a-js/sdk` ClientFactory) against `argv[2]` (server URL) and
 * assistant `argv[3]`, through the card's JSON-RPC interface of protocol version `argv[4]`
 * (`1.0`, or `0.3` for the SDK's v0.3 transport): send, get, stream. Prints what it received as
 * JSON. A separate process, like the MCP test client, so vitest's `source` export condition does
 * not apply to the SDK's dependencies.
 */
const [baseUrl, assistant, protocolVersion] = process.argv.slice(2) as [string, string, string];
const legacyCompat = { enabled: true };
const cardResolver = new DefaultAgentCardResolver({ legacyCompat });
const card = await cardResolver.resolve(baseUrl, `.well-known/agent-card.json?assistant_id=${assistant}`);
const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ legacyCompat })], cardResolver });
const client = await factory.createFromAgentCard({
  ...card,
  supportedInterfaces: card.supportedInterfaces.filter((i) => i.protocolVersion === protocolVersion),
});
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
