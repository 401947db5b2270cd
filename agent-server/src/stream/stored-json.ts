import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { LruCache } from "../storage/lru-cache.ts";
import { toJsonValue } from "../threads/state.ts";

/** Lists whose JSON was made from their items' texts a first time: the latest of many threads. */
const RECENT_LISTS = 256;
const OPEN = 0x5b;
const COMMA = 0x2c;
const CLOSE = 0x5d;

/** A list's items' stored texts, its API JSON, and where each item's JSON ends in it. */
interface ListJson {
  texts: readonly Buffer[];
  bytes: Buffer;
  ends: number[];
}

/** The JSON of a list's `index`th item, in its bytes. */
const itemOf = ({ bytes, ends }: ListJson, index: number) =>
  bytes.subarray(index === 0 ? 1 : (ends[index - 1] as number) + 1, ends[index]);

/**
 * The API JSON of a list (a conversation) from its items' stored texts, as UTF-8. A list that
 * starts with the items of the one made before for the same channel copies that one's bytes up
 * to there, and takes the JSON of its other items that list had (the same texts) from it too:
 * a run adding a message to a long conversation converts one message and copies the rest in
 * one piece, and nothing is kept per message.
 */
export class StoredListJson {
  readonly #serde: SerializerProtocol;
  /** The latest list made per thread, namespace and channel: the next version mostly repeats it. */
  readonly #lists = new LruCache<ListJson>(RECENT_LISTS);

  constructor(serde: SerializerProtocol) {
    this.#serde = serde;
  }

  /** `listKey`: the thread, namespace and channel the list is the value of. */
  async bytes(listKey: string, texts: readonly Buffer[]): Promise<Buffer> {
    const before = this.#lists.get(listKey);
    if (before?.texts === texts) return before.bytes;
    let shared = 0;
    if (before) while (shared < texts.length && texts[shared] === before.texts[shared]) shared++;
    const items: Buffer[] = [];
    let earlier: Map<Buffer, number> | undefined;
    for (let i = shared; i < texts.length; i++) {
      const text = texts[i] as Buffer;
      // Past a change in the middle (a removal, a replacement), most items are still the earlier list's.
      earlier ??= before ? new Map(before.texts.map((item, index) => [item, index])) : new Map();
      const index = earlier.get(text);
      items.push(index === undefined || !before ? await this.#itemJson(text) : itemOf(before, index));
    }
    // Up to the end of the last shared item (just the opening bracket when none is shared).
    const head = shared > 0 && before ? (before.ends[shared - 1] as number) : 1;
    let length = head + 1;
    for (const item of items) length += item.length + 1;
    if (shared === 0 && items.length > 0) length--;
    const bytes = Buffer.allocUnsafe(Math.max(length, 2));
    if (shared > 0 && before) before.bytes.copy(bytes, 0, 0, head);
    else bytes[0] = OPEN;
    const ends = before ? before.ends.slice(0, shared) : [];
    let offset = head;
    for (const [i, item] of items.entries()) {
      if (shared > 0 || i > 0) bytes[offset++] = COMMA;
      offset += item.copy(bytes, offset);
      ends.push(offset);
    }
    bytes[offset] = CLOSE;
    this.#lists.set(listKey, { texts, bytes, ends });
    return bytes;
  }

  async #itemJson(text: Buffer): Promise<Buffer> {
    return Buffer.from(JSON.stringify(toJsonValue(await this.#serde.loadsTyped("json", text))));
  }
}
