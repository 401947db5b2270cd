import { z } from "zod";

/**
 * Semantic search over the long-term store (`store.index` in `langgraph.json`): each indexed item
 * keeps one vector per text found at the index's field paths, and a query ranks items by the
 * cosine similarity of their closest vector. Pure helpers; the stores keep the vectors.
 */

/** LangChain's `Embeddings` interface (the part the store uses). */
export interface TextEmbedder {
  embedDocuments(texts: string[]): Promise<number[][]>;
  embedQuery(text: string): Promise<number[]>;
}

export interface StoreIndexConfig {
  dims: number;
  embeddings: TextEmbedder;
  /** Paths into the value whose text is embedded (`$` is the whole value, `a.b`, `items[*].text`, …). */
  fields: string[];
}

/** What a field path may be: `$`, or keys and `[n]` / `[-n]` / `[*]` positions joined by dots. */
export const FIELD_PATH = /^(?:\$|[^.[\]]+(?:\[(?:\*|-?\d+)\])*(?:\.[^.[\]]+(?:\[(?:\*|-?\d+)\])*)*)$/;

export const FieldPathSchema = z
  .string()
  .regex(FIELD_PATH, "a field path is `$` or keys and [n] / [*] positions joined by dots (`a.b`, `list[*].text`)");

/**
 * The texts a field path selects: `$` is the whole value, then keys (`a.b`), array positions
 * (`list[0]`, `list[-1]`) and wildcards over arrays or objects (`list[*].text`, `map.*`). Strings,
 * numbers and booleans are their text; objects and arrays their JSON.
 */
export function textsAtPath(value: unknown, path: string): string[] {
  if (path === "$") return [JSON.stringify(value)];
  let nodes: unknown[] = [value];
  for (const token of path.match(/[^.[\]]+|\[[^\]]*\]/g) ?? []) nodes = nodes.flatMap((node) => step(node, token));
  return nodes.flatMap(leafText);
}

function step(node: unknown, token: string): unknown[] {
  const object = node !== null && typeof node === "object" ? (node as Record<string, unknown>) : undefined;
  if (token === "*" || token === "[*]") return Array.isArray(node) ? node : object ? Object.values(object) : [];
  if (token.startsWith("[")) {
    const position = /^\[-?\d+\]$/.test(token) ? Number(token.slice(1, -1)) : Number.NaN;
    const item = Array.isArray(node) && Number.isInteger(position) ? node.at(position) : undefined;
    return item === undefined ? [] : [item];
  }
  // Own keys only: `constructor` or `toString` are not fields of a stored value.
  return object && !Array.isArray(node) && Object.hasOwn(object, token) ? [object[token]] : [];
}

function leafText(node: unknown): string[] {
  if (typeof node === "string") return [node];
  if (typeof node === "number" || typeof node === "boolean") return [String(node)];
  return node === null || node === undefined ? [] : [JSON.stringify(node)];
}

/** The vectors of `value` as one array of `texts × dims` numbers; null when no field has text. */
export async function embedValue(
  index: StoreIndexConfig,
  value: Record<string, unknown>,
  fields: string[],
): Promise<Float32Array | null> {
  const texts = fields.flatMap((path) => textsAtPath(value, path));
  if (texts.length === 0) return null;
  const vectors = await index.embeddings.embedDocuments(texts);
  const flat = new Float32Array(texts.length * index.dims);
  texts.forEach((_, i) => {
    flat.set(checkedVector(vectors[i], index.dims), i * index.dims);
  });
  return flat;
}

export async function embedQuery(index: StoreIndexConfig, query: string): Promise<Float32Array> {
  return Float32Array.from(checkedVector(await index.embeddings.embedQuery(query), index.dims));
}

function checkedVector(vector: number[] | undefined, dims: number): number[] {
  if (!Array.isArray(vector) || vector.length !== dims) {
    throw new Error(`store.index.dims is ${dims}, but the embeddings returned a vector of ${vector?.length ?? 0}`);
  }
  return vector;
}

/** Cosine similarity of `query` and the closest of an item's vectors; undefined for an unindexed item. */
export function bestCosine(query: Float32Array, vectors: Float32Array | null, dims: number): number | undefined {
  // Vectors of another length were embedded under an earlier `dims`: they cannot be compared.
  if (!vectors || vectors.length === 0 || vectors.length % dims !== 0) return undefined;
  const queryNorm = Math.hypot(...query);
  let best = -Infinity;
  for (let start = 0; start < vectors.length; start += dims) {
    let dot = 0;
    let norm = 0;
    for (let i = 0; i < dims; i++) {
      const component = vectors[start + i] as number;
      dot += component * (query[i] as number);
      norm += component * component;
    }
    const denominator = Math.sqrt(norm) * queryNorm;
    best = Math.max(best, denominator === 0 ? 0 : dot / denominator);
  }
  return best;
}

/** Vectors as text for Redis (base64 of the float32 bytes). */
export const encodeVectors = (vectors: Float32Array): string =>
  Buffer.from(vectors.buffer, vectors.byteOffset, vectors.byteLength).toString("base64");

export function decodeVectors(text: string): Float32Array {
  const bytes = Buffer.from(text, "base64");
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}
