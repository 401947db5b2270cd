import { dirname } from "node:path";
import { z } from "zod";
import { importProjectExport } from "../graphs/load.ts";
import { ProjectError, parseGraphSpec, readProjectSection } from "../graphs/project.ts";
import { TtlMinutesSchema } from "../schemas/common.ts";
import { FieldPathSchema, type StoreIndexConfig, type TextEmbedder } from "./semantic.ts";
import type { StoreTtlConfig } from "./store.ts";

/** The `store` section of `langgraph.json`. */
const StoreSection = z.object({
  ttl: z
    .object({
      default_ttl: TtlMinutesSchema.nullish(),
      refresh_on_read: z.boolean().optional(),
      sweep_interval_minutes: z.number().positive().nullish(),
    })
    .optional(),
  index: z
    .object({
      embed: z.string().min(1),
      dims: z.number().int().positive(),
      fields: z.array(FieldPathSchema).min(1).optional(),
    })
    .optional(),
});

export interface StoreProjectConfig {
  ttl: StoreTtlConfig;
  index?: { embed: string; dims: number; fields: string[] };
}

export function readStoreConfig(configPath: string): StoreProjectConfig {
  const { ttl, index } = readProjectSection(configPath, "store", StoreSection);
  return {
    ttl: {
      ...(ttl?.default_ttl != null && { defaultTtl: ttl.default_ttl }),
      ...(ttl?.refresh_on_read !== undefined && { refreshOnRead: ttl.refresh_on_read }),
      ...(ttl?.sweep_interval_minutes != null && { sweepIntervalMinutes: ttl.sweep_interval_minutes }),
    },
    ...(index && { index: { embed: index.embed, dims: index.dims, fields: index.fields ?? ["$"] } }),
  };
}

const MODULE_EXTENSION = /\.(ts|mts|cts|js|mjs|cjs)$/;

/**
 * Loads `store.index.embed`, `<module>:<export>` relative to `langgraph.json`: a LangChain
 * `Embeddings` instance (e.g. `new OpenAIEmbeddings({ model })`), or a function from texts to
 * vectors. Provider strings (`openai:text-embedding-3-small`) need a package this server does not
 * bundle, so they are refused at start with what to write instead.
 */
export async function loadStoreIndex(
  configPath: string,
  index: NonNullable<StoreProjectConfig["index"]>,
): Promise<StoreIndexConfig> {
  // The same `<module>:<export>` form as a graph in `graphs`, resolved the same way.
  const { modulePath, exportName } = parseGraphSpec("store.index.embed", index.embed, dirname(configPath));
  if (!MODULE_EXTENSION.test(modulePath)) {
    throw new ProjectError(
      `${configPath}: store.index.embed "${index.embed}" must name a module export, like "./embeddings.ts:embeddings": ` +
        "a LangChain Embeddings instance or a function (texts: string[]) => Promise<number[][]>; provider names are not built in",
    );
  }
  // Its loader stays open: the embedder is used for as long as the server runs.
  const { exported } = await importProjectExport("store.index.embed", modulePath, exportName);
  return {
    dims: index.dims,
    fields: index.fields,
    embeddings: asEmbedder(await exported, `${configPath}: store.index.embed`),
  };
}

function asEmbedder(exported: unknown, what: string): TextEmbedder {
  const candidate = exported as Partial<TextEmbedder> | undefined;
  if (typeof candidate?.embedDocuments === "function" && typeof candidate.embedQuery === "function") {
    return candidate as TextEmbedder;
  }
  if (typeof exported === "function") {
    const embed = exported as (texts: string[]) => Promise<number[][]>;
    return { embedDocuments: (texts) => embed(texts), embedQuery: async (text) => (await embed([text]))[0] ?? [] };
  }
  throw new ProjectError(`${what} is neither an Embeddings instance nor a function`);
}
