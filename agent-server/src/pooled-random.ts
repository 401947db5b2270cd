import { randomFillSync, type webcrypto } from "node:crypto";

/** Requests up to this size are served from the pool; larger ones go to the platform directly. */
const MAX_POOLED_BYTES = 256;
const POOL_BYTES = 16 * 1024;

const pooled = Symbol.for("agentplane.pooledGetRandomValues");

/**
 * Serves small `crypto.getRandomValues` calls from a pool refilled by the same CSPRNG, as Node's
 * own `randomUUID` does. LangChain builds a run tree with a fresh UUID (16 random bytes through
 * `getRandomValues`) for every runnable call of a graph; each platform call costs microseconds of
 * validation and entropy work, which added up to an eighth of the server's CPU per run. Bytes are
 * handed out once and never reused; larger and non-integer requests keep the platform behaviour.
 * The patch is on the process's `crypto`, so graph code running in the server gets the pooled
 * generator too; POOLED_RANDOM_VALUES=false leaves the platform's in place. Idempotent.
 */
export function installPooledRandomValues(): void {
  const platformCrypto = globalThis.crypto as webcrypto.Crypto & { [pooled]?: true };
  if (platformCrypto[pooled]) return;
  const platform = platformCrypto.getRandomValues.bind(platformCrypto);
  const pool = new Uint8Array(POOL_BYTES);
  let offset = POOL_BYTES;
  const getRandomValues = <T extends ArrayBufferView | null>(array: T): T => {
    if (
      !ArrayBuffer.isView(array) ||
      array.byteLength > MAX_POOLED_BYTES ||
      array instanceof DataView ||
      array instanceof Float32Array ||
      array instanceof Float64Array
    ) {
      return platform(array as never) as T;
    }
    const size = array.byteLength;
    if (offset + size > POOL_BYTES) {
      randomFillSync(pool);
      offset = 0;
    }
    new Uint8Array(array.buffer, array.byteOffset, size).set(pool.subarray(offset, offset + size));
    // Zeroed once handed out, so no later reader of the pool memory can see them.
    pool.fill(0, offset, offset + size);
    offset += size;
    return array;
  };
  Object.defineProperty(platformCrypto, "getRandomValues", {
    value: getRandomValues,
    configurable: true,
    writable: true,
  });
  Object.defineProperty(platformCrypto, pooled, { value: true });
}
