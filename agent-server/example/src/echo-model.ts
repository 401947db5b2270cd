import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import { BaseChatModel, type BaseChatModelParams } from "@langchain/core/language_models/chat_models";
import { AIMessage, AIMessageChunk, type BaseMessage } from "@langchain/core/messages";
import { ChatGenerationChunk, type ChatResult } from "@langchain/core/outputs";

export interface EchoChatModelParams extends BaseChatModelParams {
  /** Text put in front of the echoed message. */
  prefix?: string;
}

function lastHumanText(messages: BaseMessage[]): string {
  const human = messages.findLast((message) => message.getType() === "human");
  return human?.text ?? "";
}

/**
 * A chat model that needs no network and no key: it replies with `prefix` + the last human
 * message, streamed word by word, so runs are reproducible in tests and demos.
 */
export class EchoChatModel extends BaseChatModel {
  readonly prefix: string;

  constructor(params: EchoChatModelParams = {}) {
    super(params);
    this.prefix = params.prefix ?? "";
  }

  _llmType(): string {
    return "echo";
  }

  private reply(messages: BaseMessage[]): string {
    return `${this.prefix}${lastHumanText(messages)}`;
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const text = this.reply(messages);
    return { generations: [{ text, message: new AIMessage({ content: text }) }] };
  }

  override async *_streamResponseChunks(
    messages: BaseMessage[],
    _options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    // Split before each space so the chunks concatenate back to the exact reply.
    const tokens = this.reply(messages).split(/(?= )/);
    for (const token of tokens) {
      const chunk = new ChatGenerationChunk({ text: token, message: new AIMessageChunk({ content: token }) });
      yield chunk;
      await runManager?.handleLLMNewToken(token);
    }
  }
}
