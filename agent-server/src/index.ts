export { type AgentApp, createApp, type ServerModule } from "./app.ts";
export { ConfigError, loadConfig, type ServerConfig, type StorageConfig } from "./config.ts";
export type { ServerContext } from "./context.ts";
export { ProjectGraphRegistry } from "./graphs/registry.ts";
export type { AnyCompiledGraph, GraphRegistry, GraphSchemas } from "./graphs/types.ts";
export { type AgentServer, defaultModules, type StartOptions, startAgentServer } from "./server.ts";
export type * from "./storage/types.ts";
export { applySupersteps, type ThreadState, toThreadState } from "./threads/state.ts";
