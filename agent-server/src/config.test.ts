import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { hashApiKey } from "@agentplane/common";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "./config.ts";

describe("loadConfig", () => {
  it("applies defaults: dev on loopback with memory storage, serve on all interfaces with Redis", () => {
    const dev = loadConfig(["dev"], {});
    expect(dev).toMatchObject({
      mode: "dev",
      configPath: resolve("langgraph.json"),
      port: 8000,
      host: "127.0.0.1",
      storage: { kind: "memory" },
      apiKeyHashes: [],
      logLevel: "info",
      nWorkers: 10,
      bodyLimit: "10mb",
      corsOrigins: ["*"],
      pooledRandomValues: true,
    });
    const serve = loadConfig(["serve", "--config", "x/langgraph.json"], { REDIS_URI: "redis://r:6380" });
    expect(serve).toMatchObject({
      host: "0.0.0.0",
      configPath: resolve("x/langgraph.json"),
      storage: { kind: "redis", url: "redis://r:6380", prefix: "agentplane:" },
    });
  });

  it("lets flags win over environment", () => {
    const config = loadConfig(["dev", "--port", "9001", "--host", "0.0.0.0"], {
      PORT: "7000",
      HOST: "10.0.0.1",
      N_WORKERS: "3",
      LOG_LEVEL: "DEBUG",
      BODY_LIMIT: "1mb",
      CORS_ALLOW_ORIGINS: "https://a.example, https://b.example",
    });
    expect(config).toMatchObject({
      port: 9001,
      host: "0.0.0.0",
      nWorkers: 3,
      logLevel: "debug",
      bodyLimit: "1mb",
      corsOrigins: ["https://a.example", "https://b.example"],
    });
    expect(loadConfig(["dev"], { PORT: "7000" }).port).toBe(7000);
  });

  it.each([
    ["false", false],
    ["FALSE", false],
    ["0", false],
    ["true", true],
    ["1", true],
  ])("reads POOLED_RANDOM_VALUES=%s as %s", (value, expected) => {
    expect(loadConfig(["dev"], { POOLED_RANDOM_VALUES: value }).pooledRandomValues).toBe(expected);
  });

  it("keeps only SHA-256 digests of API keys, from the variable and the file", () => {
    const dir = mkdtempSync(join(tmpdir(), "agentplane-keys-"));
    const file = join(dir, "keys");
    writeFileSync(file, `# operators\n${hashApiKey("from-file").toUpperCase()}  # ci\n\n`);
    const config = loadConfig(["dev"], { AGENTPLANE_API_KEYS: "k1, k2,", AGENTPLANE_API_KEYS_FILE: file });
    expect(config.apiKeyHashes).toEqual([hashApiKey("k1"), hashApiKey("k2"), hashApiKey("from-file")]);
    expect(JSON.stringify(config)).not.toContain("k1");
  });

  it.each([
    [["start"], {}, /expected command "serve", "dev", "dockerfile" or "build", got "start"/],
    [[], {}, /got nothing/],
    [["dev", "--port", "eighty"], {}, /port must be a number/],
    [["dev", "--port", "70000"], {}, /port must be at most 65535/],
    [["dev", "--bogus"], {}, /Unknown option '--bogus'/],
    [["serve"], {}, /REDIS_URI is required/],
    [["serve"], { REDIS_URI: "http://x" }, /REDIS_URI must start with redis:\/\//],
    [["dev"], { LOG_LEVEL: "loud" }, /LOG_LEVEL must be one of/],
    [["dev"], { N_WORKERS: "-1" }, /N_WORKERS must be at least 0/],
    [["dev"], { BODY_LIMIT: "lots" }, /BODY_LIMIT must look like/],
    [["dev"], { POOLED_RANDOM_VALUES: "yes" }, /POOLED_RANDOM_VALUES must be true or false/],
    [["dev"], { POOLED_RANDOM_VALUES: "" }, /POOLED_RANDOM_VALUES must be true or false/],
    [["dev"], { AGENTPLANE_API_KEYS_FILE: "/nonexistent/keys" }, /cannot read AGENTPLANE_API_KEYS_FILE/],
  ])("rejects %j %j with a one-line message", (argv, env, message) => {
    expect(() => loadConfig(argv, env as NodeJS.ProcessEnv)).toThrow(ConfigError);
    expect(() => loadConfig(argv, env as NodeJS.ProcessEnv)).toThrow(message);
  });

  it("rejects key files with entries that are not digests, without echoing them", () => {
    const dir = mkdtempSync(join(tmpdir(), "agentplane-keys-"));
    const file = join(dir, "keys");
    writeFileSync(file, "plain-secret\n");
    expect(() => loadConfig(["dev"], { AGENTPLANE_API_KEYS_FILE: file })).toThrow(
      "AGENTPLANE_API_KEYS_FILE entry 1 is not a SHA-256 hex digest",
    );
  });
});
