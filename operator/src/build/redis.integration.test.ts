import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expandVariableReferences } from "../../../testing/kubelet/pod-env.ts";
import { freePort } from "../../../testing/redis-server.ts";
import { agentDeployment, agentRevision } from "../testing/fixtures.ts";
import { buildAgentDeployment } from "./agent-server.ts";
import {
  buildRedisSecret,
  buildRedisStatefulSet,
  generateRedisPassword,
  REDIS_CONFIG_DIR,
  REDIS_PASSWORD_KEY,
} from "./redis.ts";
import { defaultBuildSettings as settings } from "./settings.ts";

type Json = any;

/**
 * The managed Redis as the operator renders it, run by a real redis-server: the Secret's files are
 * written where the pod would mount them and the container's args are run as they are, with only the
 * port and the mount paths moved to what a local process can use.
 */
const agd = agentDeployment();
const secret = buildRedisSecret(agd, generateRedisPassword());
const files: Record<string, string> = Object.fromEntries(
  Object.entries(secret.data).map(([key, value]) => [key, Buffer.from(value, "base64").toString()]),
);
const password = files[REDIS_PASSWORD_KEY] as string;
const pod: Json = buildRedisStatefulSet(agd, settings).spec.template.spec;
const container = pod.containers[0];
/** Env of a container resolved like the kubelet does, from the Secret above. */
function resolveEnv(env: Json[]): Record<string, string> {
  const resolved: Record<string, string> = {};
  for (const variable of env) {
    const ref = variable.valueFrom?.secretKeyRef;
    if (ref) {
      expect(ref.name).toBe(secret.metadata.name);
      resolved[variable.name] = files[ref.key] as string;
    } else {
      resolved[variable.name] = expandVariableReferences(variable.value ?? "", resolved);
    }
  }
  return resolved;
}

let dir: string;
let port: number;
let server: ChildProcess;

/** One RESP exchange on a fresh connection, without any client library in between. */
function rawCommand(command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ port, host: "127.0.0.1" }, () => socket.write(`${command}\r\n`));
    socket.once("data", (data) => {
      socket.destroy();
      resolve(data.toString().trim());
    });
    socket.once("error", reject);
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "managed-redis-"));
  const configDir = join(dir, "config");
  const dataDir = join(dir, "data");
  for (const d of [configDir, dataDir]) mkdirSync(d);
  const volume = pod.volumes.find((v: Json) => v.secret?.secretName === secret.metadata.name);
  for (const item of volume.secret.items) {
    writeFileSync(join(configDir, item.path), files[item.key] as string);
  }
  port = await freePort();
  const [binary, ...args] = (container.args as string[]).map((arg) =>
    arg.startsWith(`${REDIS_CONFIG_DIR}/`)
      ? join(configDir, arg.slice(REDIS_CONFIG_DIR.length + 1))
      : arg === "/data"
        ? dataDir
        : arg,
  );
  server = spawn(binary as string, [...args, "--port", String(port), "--bind", "127.0.0.1"], { stdio: "ignore" });
  const deadline = Date.now() + 10_000;
  while (!(await rawCommand("PING").catch(() => ""))) {
    if (Date.now() > deadline) throw new Error("redis-server did not start");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
});

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.once("exit", resolve));
    server.kill("SIGTERM");
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("managed Redis with its rendered configuration", () => {
  it("refuses a connection without the password", async () => {
    expect(await rawCommand("PING")).toMatch(/^-NOAUTH/);
    expect(await rawCommand("GET anything")).toMatch(/^-NOAUTH/);
  });

  it("refuses a wrong password", async () => {
    expect(await rawCommand("AUTH not-the-password")).toMatch(/^-WRONGPASS/);
  });

  it("serves the agent server through the REDIS_URI it is given (password from the Secret via $(VAR))", async () => {
    const spec: Json = buildAgentDeployment(agd, agentRevision(), settings).spec.template.spec;
    const env = resolveEnv(spec.containers[0].env);
    const uri = new URL(env.REDIS_URI as string);
    expect(uri.password).toBe(password);
    // Same credentials, the local server's address instead of the cluster DNS name.
    const client = createClient({ url: `redis://:${uri.password}@127.0.0.1:${port}` });
    await client.connect();
    try {
      await client.set("k", "v");
      expect(await client.get("k")).toBe("v");
      // Protected mode stays on (it guards only a Redis without a password; this one has one).
      expect(await client.configGet("protected-mode")).toEqual({ "protected-mode": "yes" });
    } finally {
      await client.close();
    }
  });

  it("answers the readiness probe, which authenticates through REDISCLI_AUTH", async () => {
    const run = promisify(execFile);
    const [cli, ...probeArgs] = container.readinessProbe.exec.command as string[];
    const args = ["-p", String(port), ...probeArgs];
    const probe = await run(cli as string, args, { env: { ...process.env, ...resolveEnv(container.env) } });
    expect(probe.stdout.trim()).toBe("PONG");
    const unauthenticated = await run(cli as string, args, { env: { PATH: process.env.PATH } }).catch((e) => e);
    expect(`${unauthenticated.stdout}`).toMatch(/NOAUTH/);
  });

  it("keeps the password out of the command line and the pod specs", async () => {
    expect(await rawCommand(`AUTH ${password}`)).toBe("+OK");
    const agentPod = buildAgentDeployment(agd, agentRevision(), settings).spec.template;
    for (const rendered of [JSON.stringify(pod), JSON.stringify(agentPod)]) expect(rendered).not.toContain(password);
  });
});
