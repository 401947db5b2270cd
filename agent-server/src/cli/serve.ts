import { dirname } from "node:path";
import { createLogger, type Logger } from "@agentplane/common";
import type { ServerConfig } from "../config.ts";
import { registerDefaultAssistants } from "../graphs/default-assistants.ts";
import { GraphLoadError } from "../graphs/load.ts";
import { ProjectError } from "../graphs/project.ts";
import { type AgentServer, startAgentServer } from "../server.ts";
import { EXIT_USAGE, fail } from "./fail.ts";
import { watchProject } from "./watch.ts";

async function start(config: ServerConfig, logger: Logger): Promise<AgentServer> {
  try {
    return await startAgentServer(config, { logger });
  } catch (error) {
    if (error instanceof ProjectError || error instanceof GraphLoadError) fail(error.message, EXIT_USAGE);
    fail(`cannot start: ${(error as Error).message}`, 1);
  }
}

/** Dev mode: re-import the graphs whenever a project file changes, keeping threads and assistants. */
function reloadOnChange(server: AgentServer, logger: Logger) {
  return watchProject(dirname(server.ctx.config.configPath), (file) => {
    server.graphs
      .reload()
      .then(() => registerDefaultAssistants(server.ctx))
      .then(() => logger.info({ file }, "graphs reloaded"))
      .catch((error: unknown) =>
        logger.error({ err: error, file }, "reload failed; still serving the previous graphs"),
      );
  });
}

/** Starts the server for a parsed command line and stops it cleanly on SIGTERM or SIGINT. */
export async function serve(config: ServerConfig): Promise<void> {
  const logger = createLogger("agent-server", config.logLevel);
  const server = await start(config, logger);
  const watcher = config.mode === "dev" ? reloadOnChange(server, logger) : undefined;
  logger.info({ url: server.url, mode: config.mode, storage: config.storage.kind }, "agent server started");
  process.stdout.write(`Agent server: ${server.url}\nAPI docs:     ${server.url}/docs\n`);

  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, "second signal: exiting without waiting");
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, "shutting down: finishing in-flight requests");
    watcher?.close();
    server
      .close()
      .then(() => {
        logger.info("shut down cleanly");
        process.exit(0);
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, "shutdown failed");
        process.exit(1);
      });
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
}
