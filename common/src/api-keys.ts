import { createHash, timingSafeEqual } from "node:crypto";

/** Hex SHA-256 of an API key: the only form in which keys are stored or configured. */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

const HASH_PATTERN = /^[0-9a-f]{64}$/;

export function isApiKeyHash(value: string): boolean {
  return HASH_PATTERN.test(value);
}

/**
 * Matches a presented key against stored hashes. Every stored hash is compared with
 * `timingSafeEqual` (equal-length digests), so timing reveals neither key nor position.
 */
export class ApiKeyVerifier<T = true> {
  private readonly entries: { digest: Buffer; value: T }[];

  constructor(hashes: Iterable<[hash: string, value: T]>) {
    this.entries = [...hashes].map(([hash, value]) => {
      if (!isApiKeyHash(hash)) throw new Error("API key hashes must be 64 hex characters (SHA-256)");
      return { digest: Buffer.from(hash, "hex"), value };
    });
  }

  get size(): number {
    return this.entries.length;
  }

  verify(presented: string | undefined): T | undefined {
    if (!presented) return undefined;
    const digest = createHash("sha256").update(presented, "utf8").digest();
    let match: T | undefined;
    for (const entry of this.entries) {
      if (timingSafeEqual(digest, entry.digest)) match = entry.value;
    }
    return match;
  }
}
