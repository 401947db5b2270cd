import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, AIMessageChunk } from "@langchain/core/messages";
import { ChatGenerationChunk } from "@langchain/core/outputs";
import * as langgraph from "@langchain/langgraph";
import { withLangGraph } from "@langchain/langgraph/zod";
import { z } from "zod/v3";
import { buildChatGraph, buildZodGraph } from "../../chat-graph.ts";

/** The graphs of the version suite, built with the repository's LangGraph.js and LangChain (the version the reference server supports). */
export const graph = buildChatGraph({ langgraph, BaseChatModel, AIMessage, AIMessageChunk, ChatGenerationChunk });
export const profile = buildZodGraph({ langgraph, withLangGraph, z });
