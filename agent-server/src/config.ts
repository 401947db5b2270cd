import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { hashApiKey, isApiKeyHash } from "@agentplane/common";
import { z } from "zod";
import { WebhookPolicy } from "./runs/worker/webhook-policy.ts";

export type ServerMode = "dev" | "serve";

export type StorageConfig = { kind: "memory" } | { kind: "redis"; url: string; prefix: string };

/** Everything the server reads from flags and environment, validated once at start. */
export interface ServerConfig {
  mode: ServerMode;
  /** Absolute path of `langgraph.json`. */
  configPath: string;
  port: number;
  host: string;
  storage: StorageConfig;
  /** SHA-256 hex digests of the accepted API keys; empty = no authentication. */
  apiKeyHashes: string[];
  logLevel: string;
  /** Run workers per process. */
  nWorkers: number;
  /** Largest accepted JSON body (express `bytes` syntax, e.g. `10mb`). */
  bodyLimit: string;
  /** Allowed CORS origins; `*` allows any. */
  corsOrigins: string[];
  /** How long shutdown waits for in-flight requests before closing them. */
  shutdownGraceMs: number;
  /**
   * Serve small `crypto.getRandomValues` calls from a pool of CSPRNG bytes (POOLED_RANDOM_VALUES,
   * default true; see pooled-random.ts). The patch is process-wide: graph code sees it too.
   */
  pooledRandomValues: boolean;
  /**
   * Internal hosts absolute webhooks may reach (WEBHOOK_ALLOWED_HOSTS: host names, `*.domain`,
   * addresses, CIDR ranges); loopback, link-local and private addresses are refused otherwise.
   */
  webhookPolicy: WebhookPolicy;
}

/** Bad flags or environment: the CLI prints the message and exits with code 2. */
export class ConfigError extends Error {}

/** Parses settings, turning the first problem into a ConfigError with a one-line message. */
export function parseSettings<S extends z.ZodType>(schema: S, raw: unknown, what: string): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(parsed.error.issues[0]?.message ?? `invalid ${what}`);
  return parsed.data;
}

const DEFAULT_CONFIG_FILE = "langgraph.json";

/** An integer setting read from a flag or an environment variable, named in its error messages. */
export const integerSetting = (name: string, min: number, max: number) =>
  z.coerce
    .number({ error: `${name} must be a number` })
    .int(`${name} must be an integer`)
    .min(min, `${name} must be at least ${min}`)
    .max(max, `${name} must be at most ${max}`);

const RawSettings = z.object({
  mode: z.enum(["dev", "serve"]),
  config: z.string().min(1),
  port: integerSetting("port", 0, 65535),
  host: z.string().min(1, "host must not be empty"),
  redisUrl: z
    .string()
    .regex(/^rediss?:\/\//, "REDIS_URI must start with redis:// or rediss://")
    .optional(),
  redisPrefix: z.string().min(1, "REDIS_PREFIX must not be empty"),
  logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], {
    error: "LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent",
  }),
  nWorkers: integerSetting("N_WORKERS", 0, 1000),
  bodyLimit: z.string().regex(/^\d+(b|kb|mb|gb)?$/i, "BODY_LIMIT must look like 512kb, 10mb or a byte count"),
  corsOrigins: z.string().min(1),
  shutdownGraceMs: integerSetting("SHUTDOWN_GRACE_MS", 0, 600_000),
  pooledRandomValues: z
    .enum(["true", "false", "1", "0"], { error: "POOLED_RANDOM_VALUES must be true or false" })
    .transform((value) => value === "true" || value === "1"),
});

function webhookPolicy(text: string): WebhookPolicy {
  try {
    return new WebhookPolicy(text.split(",").filter((entry) => entry.trim().length > 0));
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
}

function readKeyFile(path: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ConfigError(`cannot read AGENTPLANE_API_KEYS_FILE ${path}: ${(error as Error).message}`);
  }
  const hashes = text
    .split(/\r?\n/)
    .map((line) => line.replace(/#.*/, "").trim().toLowerCase())
    .filter((line) => line.length > 0);
  const invalid = hashes.findIndex((hash) => !isApiKeyHash(hash));
  if (invalid >= 0) {
    throw new ConfigError(`AGENTPLANE_API_KEYS_FILE entry ${invalid + 1} is not a SHA-256 hex digest`);
  }
  return hashes;
}

/** Plain keys are hashed immediately; only digests leave this function. */
function apiKeyHashes(env: NodeJS.ProcessEnv): string[] {
  const plain = (env.AGENTPLANE_API_KEYS ?? "")
    .split(",")
    .map((key) => key.trim())
    .filter((key) => key.length > 0)
    .map(hashApiKey);
  const fromFile = env.AGENTPLANE_API_KEYS_FILE ? readKeyFile(env.AGENTPLANE_API_KEYS_FILE) : [];
  return [...new Set([...plain, ...fromFile])];
}

function parseFlags(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        config: { type: "string" },
        port: { type: "string" },
        host: { type: "string" },
        // Handled by the CLI before configuration is read; declared so strict parsing accepts it.
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
}

export const USAGE = `Usage: agent-server <serve|dev> [--config langgraph.json] [--port 8000] [--host 127.0.0.1]
       agent-server <dockerfile|build> [options]   (agent-server dockerfile --help)

  serve       production server on Redis (REDIS_URI required)
  dev         development server with in-memory storage that reloads graphs when project files change
  dockerfile  print or write a Dockerfile for the project's graph image
  build       generate that Dockerfile and run \`docker build\` (needs Docker)`;

/** Parses `argv` (without node and script) and `env` into a validated config; throws ConfigError. */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): ServerConfig {
  const { values, positionals } = parseFlags(argv);
  const [command, ...extra] = positionals;
  if (command !== "serve" && command !== "dev") {
    const got = command ? `"${command}"` : "nothing";
    throw new ConfigError(`expected command "serve", "dev", "dockerfile" or "build", got ${got}`);
  }
  if (extra.length > 0) throw new ConfigError(`unexpected argument "${extra[0]}"`);
  const raw = parseSettings(
    RawSettings,
    {
      mode: command,
      config: values.config ?? DEFAULT_CONFIG_FILE,
      port: values.port ?? env.PORT ?? 8000,
      host: values.host ?? env.HOST ?? (command === "dev" ? "127.0.0.1" : "0.0.0.0"),
      redisUrl: env.REDIS_URI || undefined,
      redisPrefix: env.REDIS_PREFIX ?? "agentplane:",
      logLevel: (env.LOG_LEVEL ?? "info").toLowerCase(),
      nWorkers: env.N_WORKERS ?? 10,
      bodyLimit: env.BODY_LIMIT ?? "10mb",
      corsOrigins: env.CORS_ALLOW_ORIGINS ?? "*",
      shutdownGraceMs: env.SHUTDOWN_GRACE_MS ?? 10_000,
      pooledRandomValues: (env.POOLED_RANDOM_VALUES ?? "true").toLowerCase(),
    },
    "configuration",
  );
  if (raw.mode === "serve" && !raw.redisUrl) {
    throw new ConfigError(
      "REDIS_URI is required for `agent-server serve` (use `agent-server dev` for in-memory storage)",
    );
  }
  return {
    mode: raw.mode,
    configPath: resolve(raw.config),
    port: raw.port,
    host: raw.host,
    storage:
      raw.mode === "serve" && raw.redisUrl
        ? { kind: "redis", url: raw.redisUrl, prefix: raw.redisPrefix }
        : { kind: "memory" },
    apiKeyHashes: apiKeyHashes(env),
    logLevel: raw.logLevel,
    nWorkers: raw.nWorkers,
    bodyLimit: raw.bodyLimit,
    corsOrigins: raw.corsOrigins.split(",").map((origin) => origin.trim()),
    shutdownGraceMs: raw.shutdownGraceMs,
    pooledRandomValues: raw.pooledRandomValues,
    webhookPolicy: webhookPolicy(env.WEBHOOK_ALLOWED_HOSTS ?? ""),
  };
}
