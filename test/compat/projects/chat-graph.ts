/**
 * The chat graph of the version suite (test/compat/versions.test.ts), written once for every
 * LangGraph.js version: each project passes its own copies of LangGraph and LangChain, so the
 * graph runs on the version that project installs. A scripted chat model streams its answer in
 * words; then a human approves it (`interrupt`), and the graph records the verdict.
 */

// The parts of LangGraph.js and @langchain/core this graph uses; every supported version has them.
interface ChatGraphDeps {
  langgraph: {
    Annotation: any;
    MessagesAnnotation: any;
    StateGraph: any;
    START: string;
    END: string;
    interrupt: (value: unknown) => unknown;
  };
  BaseChatModel: any;
  AIMessage: any;
  AIMessageChunk: any;
  ChatGenerationChunk: any;
}

export function buildChatGraph({
  langgraph,
  BaseChatModel,
  AIMessage,
  AIMessageChunk,
  ChatGenerationChunk,
}: ChatGraphDeps) {
  const { Annotation, MessagesAnnotation, StateGraph, START, END, interrupt } = langgraph;

  const replyTo = (text: string) => ({ id: "msg-reply-1", content: `You said: ${text}` });

  /** Answers the same whether invoked or streamed, like a provider's model. */
  class ScriptedChatModel extends BaseChatModel {
    _llmType() {
      return "scripted";
    }

    async _generate(messages: { content: unknown }[]) {
      const reply = replyTo(String(messages.at(-1)?.content));
      return { generations: [{ text: reply.content, message: new AIMessage(reply) }] };
    }

    async *_streamResponseChunks(messages: { content: unknown }[], _options: unknown, runManager?: any) {
      const { id, content } = replyTo(String(messages.at(-1)?.content));
      for (const word of content.split(/(?<= )/)) {
        const chunk = new ChatGenerationChunk({ text: word, message: new AIMessageChunk({ id, content: word }) });
        yield chunk;
        await runManager?.handleLLMNewToken(word, undefined, undefined, undefined, undefined, { chunk });
      }
    }
  }

  const model = new ScriptedChatModel({});
  const State = Annotation.Root({ ...MessagesAnnotation.spec, verdict: Annotation() });

  return new StateGraph(State)
    .addNode("agent", async (state: { messages: unknown[] }, config: unknown) => ({
      messages: [await model.invoke(state.messages, config)],
    }))
    .addNode("approve", () => ({ verdict: String(interrupt({ question: "Send this answer?" })) }))
    .addEdge(START, "agent")
    .addEdge("agent", "approve")
    .addEdge("approve", END)
    .compile();
}

interface ZodGraphDeps {
  langgraph: { StateGraph: any; START: string; END: string; MessagesZodMeta: unknown };
  withLangGraph: (schema: unknown, meta: any) => unknown;
  z: any;
}

/**
 * A zod state (zod 3, as LangGraph.js 0.4 and 1.0 users write it) whose messages channel carries
 * LangGraph's metadata through `withLangGraph`: recorded in the project's copy of LangGraph,
 * which is not the server's, so its schemas show it only when read with the project's copy.
 */
export function buildZodGraph({ langgraph, withLangGraph, z }: ZodGraphDeps) {
  const { StateGraph, START, END, MessagesZodMeta } = langgraph;
  const State = z.object({
    messages: withLangGraph(z.custom(), MessagesZodMeta),
    topic: z.string().describe("What the chat is about"),
  });
  return new StateGraph(State)
    .addNode("note", () => ({}))
    .addEdge(START, "note")
    .addEdge("note", END)
    .compile();
}
