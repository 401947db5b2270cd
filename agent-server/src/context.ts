import type { Logger } from "@agentplane/common";
import type { ServerConfig } from "./config.ts";
import type { GraphRegistry } from "./graphs/types.ts";
import type { Storage } from "./storage/types.ts";

/** Everything a route needs, built once at start and passed down (no module singletons). */
export interface ServerContext {
  config: ServerConfig;
  storage: Storage;
  graphs: GraphRegistry;
  logger: Logger;
}
