#!/usr/bin/env node
import { ConfigError, loadConfig, type ServerConfig, USAGE } from "../config.ts";
import { EXIT_USAGE, fail } from "./fail.ts";

function readConfig(argv: string[]): ServerConfig {
  try {
    return loadConfig(argv);
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message, EXIT_USAGE);
    throw error;
  }
}

// The server and image builder are imported only once the command line is known to need them:
// loading the server (LangGraph, express, Redis) takes longer than everything else a usage
// error or `--help` does.
async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const [command, ...rest] = argv;
  if (command === "dockerfile" || command === "build") {
    const { runImageCommand } = await import("../image/cli.ts");
    process.exit(await runImageCommand(command, rest));
  }
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = readConfig(argv);
  const { serve } = await import("./serve.ts");
  await serve(config);
}

await main();
