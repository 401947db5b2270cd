import { createHash } from "node:crypto";
import type { RedisArgument } from "redis";

/** The part of a node-redis client (plain or type-mapped) that runs Lua scripts. */
interface ScriptRunner {
  evalSha(sha: RedisArgument, options: { keys: RedisArgument[]; arguments: RedisArgument[] }): Promise<unknown>;
  eval(script: RedisArgument, options: { keys: RedisArgument[]; arguments: RedisArgument[] }): Promise<unknown>;
}

/**
 * A Lua script sent by SHA (EVALSHA), falling back to EVAL when the server has not seen it yet
 * (fresh server, SCRIPT FLUSH), so the source travels once per server instead of once per call.
 */
export class RedisScript {
  readonly source: string;
  readonly sha: string;

  constructor(source: string) {
    this.source = source;
    this.sha = createHash("sha1").update(source).digest("hex");
  }

  async run(client: ScriptRunner, keys: RedisArgument[], args: RedisArgument[]): Promise<unknown> {
    const options = { keys, arguments: args };
    try {
      return await client.evalSha(this.sha, options);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
      return client.eval(this.source, options);
    }
  }
}
