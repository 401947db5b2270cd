import { RedisScript } from "../storage/redis-script.ts";

/**
 * Whole-thread changes (prune, copy, rollback of a run) read many keys, decide in the process
 * (serde, delta chains, which namespaces to keep) and then write. They are made atomic by a
 * per-thread change counter, `cp:v:<thread>`, that every `put`, `putWrites` and delete of the
 * thread increments in its script: the writes are one script call that runs only while the
 * counter is still what the reads saw, and the change is planned again otherwise. This is WATCH
 * on one key, without holding a connection per transaction (see docs/design/thread-lifecycle.md).
 */

/** Seconds a deleted thread's counter outlives it (a delete racing a plan still fails the plan). */
export const DELETED_COUNTER_SECONDS = 3600;

/** How often a change is planned again before it gives up (only under a stream of writes). */
const MAX_PLANS = 50;
/** Upper bound of the random pause before planning again, so racing planners fall out of step. */
const MAX_PAUSE_MS = 20;
/** Arguments per command: Lua's `unpack` has a stack limit far above this. */
const CHUNK = 1000;

type Arg = string | Buffer;

/**
 * Applies the commands while the counter (KEYS[1]) is ARGV[1] ('' = absent), then counts the
 * change unless ARGV[2] is '0' (a copy only reads the thread it watches). ARGV[3..]: per command
 * its name, its argument count, its arguments. Returns 1, or 0 when the thread changed since it
 * was read.
 */
const applyPlanScript = new RedisScript(`
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 0 end
local i = 3
while i <= #ARGV do
  local n = tonumber(ARGV[i + 1])
  redis.call(ARGV[i], unpack(ARGV, i + 2, i + 1 + n))
  i = i + 2 + n
end
if ARGV[2] == '1' then redis.call('INCR', KEYS[1]) end
return 1
`);

/** The writes of a planned change, recorded as the MULTI they replace was. */
export class Plan {
  readonly commands: Arg[][] = [];
  /** The counter as the plan's reads saw it, when they read it themselves (in one script). */
  basedOn: string | undefined;

  #push(command: string, key: string, args: Arg[]): this {
    this.commands.push([command, key, ...args]);
    return this;
  }

  unlink(keys: string | string[]): this {
    const [first, ...rest] = Array.isArray(keys) ? keys : [keys];
    return first === undefined ? this : this.#push("UNLINK", first, rest);
  }

  set(key: string, value: Arg): this {
    return this.#push("SET", key, [value]);
  }

  zAdd(key: string, member: string): this {
    return this.#push("ZADD", key, ["0", member]);
  }

  zRem(key: string, member: string): this {
    return this.#push("ZREM", key, [member]);
  }

  sRem(key: string, member: string): this {
    return this.#push("SREM", key, [member]);
  }

  sAdd(key: string, member: string): this {
    return this.#push("SADD", key, [member]);
  }

  hSet(key: string, field: string, value: Arg): this {
    return this.#push("HSET", key, [field, value]);
  }

  hDel(key: string, fields: Arg[]): this {
    for (let start = 0; start < fields.length; start += CHUNK)
      this.#push("HDEL", key, fields.slice(start, start + CHUNK));
    return this;
  }

  copy(source: string, target: string): this {
    return this.#push("COPY", source, [target, "REPLACE"]);
  }
}

/** What runs the script: the checkpointer's binary client. */
interface ScriptClient {
  get(key: string): Promise<unknown>;
}

/**
 * Plans a change from what it reads and applies it, atomically against every other write of the
 * thread (`counter`); planned again when one came in between. `changesWatched: false` when the
 * writes go elsewhere (a copy watches its source).
 */
export async function changeAtomically(
  client: ScriptClient & Parameters<RedisScript["run"]>[0],
  counter: string,
  plan: () => Promise<Plan>,
  { changesWatched = true }: { changesWatched?: boolean } = {},
): Promise<void> {
  for (let attempt = 0; attempt < MAX_PLANS; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * MAX_PAUSE_MS));
    const seen = await client.get(counter);
    const { commands, basedOn } = await plan();
    // Nothing to write (an already pruned thread): done, without counting a change.
    if (commands.length === 0) return;
    const args: Arg[] = [basedOn ?? (seen === null ? "" : String(seen)), changesWatched ? "1" : "0"];
    for (const [command, ...rest] of commands) args.push(command as string, String(rest.length), ...rest);
    if ((await applyPlanScript.run(client, [counter], args)) === 1) return;
  }
  throw new Error("the thread's checkpoints kept changing while a whole-thread change was planned");
}
