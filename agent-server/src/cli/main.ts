#!/usr/bin/env node
import { dirname } from "node:path";
import { createLogger, type Logger } from "@agentplane/common";
import { ConfigError, loadConfig, type ServerConfig, USAGE } from "../config.ts";
import { registerDefaultAssistants } from "../graphs/default-assistants.ts";
import { GraphLoadError } from "../graphs/load.ts";
import { ProjectError } from "../graphs/project.ts";
import { runImageCommand } from "../image/cli.ts";
import { type AgentServer, startAgentServer } from "../server.ts";
import { watchProject } from "./watch.ts";

/** Exit code for bad flags, environment or project files. */
const EXIT_USAGE = 2;

function fail(message: string, code: number): never {
  process.stderr.write(`agent-server: ${message}\n`);
  process.exit(code);
}

function readConfig(argv: string[]): ServerConfig {
  try {
    return loadConfig(argv);
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message, EXIT_USAGE);
    throw error;
  }
}

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

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const [command, ...rest] = argv;
  if (command === "dockerfile" || command === "build") process.exit(await runImageCommand(command, rest));
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = readConfig(argv);
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

await main();
