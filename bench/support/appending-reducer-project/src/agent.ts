import { randomUUID } from "node:crypto";
import { type BaseMessage, type BaseMessageLike, coerceMessageLikeToMessage } from "@langchain/core/messages";
import { Annotation, START, StateGraph } from "@langchain/langgraph";
import { EchoChatModel } from "../../../../agent-server/example/src/echo-model.ts";

/**
 * The example graph (`agent-server/example`) with a messages reducer whose cost does not grow
 * with the conversation: it appends the new messages, coerced and given an id as the stock
 * `messagesStateReducer` does, without that reducer's passes over every earlier message (coercing
 * each, a map of their ids, a filter). For a conversation that only grows, both give the same
 * states (every update here is a list), so the server stores, loads and answers the same: what
 * the growth bench measures as the difference between the two graphs is the stock reducer's
 * cost inside the server.
 */
function appendMessages(earlier: BaseMessage[], update: BaseMessageLike[]): BaseMessage[] {
  const added = update.map((like) => {
    const message = coerceMessageLikeToMessage(like);
    if (message.id === undefined || message.id === null) message._updateId(randomUUID());
    return message;
  });
  return earlier.concat(added);
}

const State = Annotation.Root({
  messages: Annotation<BaseMessage[], BaseMessageLike[]>({
    reducer: appendMessages,
    default: () => [],
  }),
});

const model = new EchoChatModel({ prefix: process.env.ECHO_MODEL_PREFIX ?? "" });

export const graph = new StateGraph(State)
  .addNode("call_model", async (state) => ({ messages: [await model.invoke(state.messages)] }))
  .addEdge(START, "call_model")
  .compile();
