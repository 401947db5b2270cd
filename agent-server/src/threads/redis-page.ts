import type { RedisClient } from "../storage/redis-client.ts";
import { RedisScript } from "../storage/redis-script.ts";
import type { Page } from "../storage/types.ts";
import type { Paging } from "./redis-store.ts";

/**
 * A page of one sorted-set index, its size and the page's records, in one script call: KEYS[1]
 * is the index; ARGV: offset, limit, '1' for descending, the record key prefix (record keys are
 * the prefix plus the member, see `threadKeys`). Returns the size, then the records' JSON.
 */
const INDEX_PAGE_SCRIPT = new RedisScript(`
local total = redis.call('ZCARD', KEYS[1])
local first, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local page = { total }
if limit <= 0 or first >= total then return page end
local ids
if ARGV[3] == '1' then ids = redis.call('ZRANGE', KEYS[1], first, first + limit - 1, 'REV')
else ids = redis.call('ZRANGE', KEYS[1], first, first + limit - 1) end
for _, id in ipairs(ids) do
  local raw = redis.call('GET', ARGV[4] .. id)
  if raw then page[#page + 1] = raw end
end
return page
`);

/**
 * A search one index answers whole (no filter, a status, or one metadata value in creation
 * order): its size, the page and the records in one round trip, where reading the size, the
 * ids and then the records would take three. Under load each round trip is a wait for Redis
 * and then for the server's turn on the CPU, so the fewer the steadier a search's latency.
 */
export async function indexPage(
  client: RedisClient,
  index: string,
  recordPrefix: string,
  paging: Paging,
): Promise<Page<string>> {
  const reply = (await INDEX_PAGE_SCRIPT.run(
    client,
    [index],
    [String(paging.offset), String(paging.limit), paging.sort_order === "desc" ? "1" : "0", recordPrefix],
  )) as [number, ...string[]];
  const [total, ...records] = reply;
  return { items: records, total };
}
