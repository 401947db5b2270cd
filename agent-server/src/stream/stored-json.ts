import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { LruCache } from "../storage/lru-cache.ts";
import { toJsonValue } from "../threads/state.ts";
import type { JsonParts } from "./references.ts";

/** Bytes of the lists' JSON kept for their next versions (the latest of each thread's, least recently used out first). */
const RECENT_LIST_BYTES = 32 * 2 ** 20;
/** Room a list's buffer leaves for the items later versions append, as a share of its length. */
const SPARE = 0.5;
const OPEN = 0x5b;
const COMMA = 0x2c;
const CLOSE = Buffer.from("]");

/**
 * A buffer that lists of one channel are written into, each version appending to the one
 * before: `used` is the end of the last one, past which nothing any version reads was written.
 */
interface Store {
  buffer: Buffer;
  used: number;
}

/** A list's items' stored texts, its API JSON but the closing bracket, and where each item's JSON ends in it. */
interface ListJson {
  texts: readonly Buffer[];
  open: Buffer;
  ends: number[];
  store: Store;
}

/** The JSON of a list's `index`th item, in its bytes. */
const itemOf = ({ open, ends }: ListJson, index: number) =>
  open.subarray(index === 0 ? 1 : (ends[index - 1] as number) + 1, ends[index]);

/**
 * The API JSON of a list (a conversation) from its items' stored texts, as UTF-8. A list that
 * starts with the items of the one made before for the same channel keeps that one's bytes up
 * to there (in the same buffer when it only adds items, else copied in one piece), and takes
 * the JSON of its other items that list had (the same texts) from it too: a run adding a
 * message to a long conversation converts one message and writes only its JSON, and nothing is
 * kept per message.
 */
export class StoredListJson {
  readonly #serde: SerializerProtocol;
  /** The latest list made per thread, namespace and channel: the next version mostly repeats it. */
  readonly #lists = new LruCache<ListJson>(RECENT_LIST_BYTES, (list) => list.store.buffer.length);

  constructor(serde: SerializerProtocol) {
    this.#serde = serde;
  }

  /** `listKey`: the thread, namespace and channel the list is the value of. */
  async json(listKey: string, texts: readonly Buffer[]): Promise<JsonParts> {
    const before = this.#lists.get(listKey);
    if (before?.texts === texts) return [before.open, CLOSE];
    let shared = 0;
    if (before) while (shared < texts.length && texts[shared] === before.texts[shared]) shared++;
    // An earlier state of the list (history): a view of the bytes made already, which stay the
    // base for the next version.
    if (before && shared === texts.length && shared > 0) {
      return [before.open.subarray(0, before.ends[shared - 1] as number), CLOSE];
    }
    const list = await this.#make(texts, before, shared);
    this.#lists.set(listKey, list);
    return [list.open, CLOSE];
  }

  /** `shared`: how many items `texts` starts with that `before` starts with too. */
  async #make(texts: readonly Buffer[], before: ListJson | undefined, shared: number): Promise<ListJson> {
    const items: Buffer[] = [];
    // Past a change in the middle (a removal, a replacement), most items are still the earlier
    // list's, found by text. A list that only adds items has none of them past its shared start:
    // no lookup is built for it (one over a long conversation was a run's largest garbage).
    const changed = before && shared < before.texts.length ? before : undefined;
    const earlier = changed && new Map(changed.texts.map((item, index) => [item, index]));
    for (let i = shared; i < texts.length; i++) {
      const text = texts[i] as Buffer;
      const index = earlier?.get(text);
      items.push(index === undefined || !changed ? await this.#itemJson(text) : itemOf(changed, index));
    }
    // Up to the end of the last shared item (just the opening bracket when none is shared).
    const head = shared > 0 && before ? (before.ends[shared - 1] as number) : 1;
    let length = head;
    for (const [i, item] of items.entries()) length += item.length + (shared > 0 || i > 0 ? 1 : 0);
    // Appended in place when the list only adds items to the one before, and that one is its buffer's last.
    const appending = before && shared === before.texts.length && before.store.used === before.open.length;
    let store = appending ? before.store : undefined;
    if (!store || store.buffer.length < length) {
      store = { buffer: Buffer.allocUnsafe(Math.ceil(length * (1 + SPARE))), used: 0 };
      if (shared > 0 && before) before.open.copy(store.buffer, 0, 0, head);
      else store.buffer[0] = OPEN;
    }
    // Sized once: kept until the next version, a list grown by `push` left its outgrown copies behind.
    const ends: number[] = new Array(texts.length);
    for (let i = 0; i < shared; i++) ends[i] = before?.ends[i] as number;
    let offset = head;
    for (const [i, item] of items.entries()) {
      if (shared > 0 || i > 0) store.buffer[offset++] = COMMA;
      offset += item.copy(store.buffer, offset);
      ends[shared + i] = offset;
    }
    store.used = offset;
    return { texts, open: store.buffer.subarray(0, offset), ends, store };
  }

  async #itemJson(text: Buffer): Promise<Buffer> {
    return Buffer.from(JSON.stringify(toJsonValue(await this.#serde.loadsTyped("json", text))));
  }
}
