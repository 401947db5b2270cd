/**
 * A deterministic stand-in for an embedding model: one dimension per topic word, counting how
 * often the text mentions it, so similarity ranks by shared topics. Tests and fixtures load it as
 * `store.index.embed`.
 */
export const TOPICS = ["cat", "dog", "tea", "car"] as const;

function embed(text: string): number[] {
  const lower = text.toLowerCase();
  return TOPICS.map((topic) => lower.split(topic).length - 1);
}

export const keywordEmbeddings = {
  embedDocuments: async (texts: string[]) => texts.map(embed),
  embedQuery: async (text: string) => embed(text),
};

/** The same model as a plain function of texts, the other shape `store.index.embed` accepts. */
export const embedKeywords = async (texts: string[]) => texts.map(embed);
