import { describe, expect, it } from "vitest";
import { ProjectError } from "../graphs/project.ts";
import { writeProjectFile } from "../graphs/testing/project-file.ts";
import { loadStoreIndex, readStoreConfig } from "./project-config.ts";

const embeddingsModule = new URL("./testing/keyword-embeddings.ts", import.meta.url).pathname;

const projectFile = (store: unknown) => writeProjectFile({ store });

describe("store section of langgraph.json", () => {
  it("maps store.ttl to the store's TTL settings and reads store.index", () => {
    const ttl = { default_ttl: 10080, refresh_on_read: false, sweep_interval_minutes: 60 };
    expect(readStoreConfig(projectFile({ ttl, index: { dims: 8, embed: "./e.ts:e" } }))).toEqual({
      ttl: { defaultTtl: 10080, refreshOnRead: false, sweepIntervalMinutes: 60 },
      index: { dims: 8, embed: "./e.ts:e", fields: ["$"] },
    });
    expect(readStoreConfig(projectFile(undefined))).toEqual({ ttl: {} });
  });

  it("names the bad key of a malformed section", () => {
    for (const [store, key] of [
      [{ ttl: { default_ttl: 0 } }, "store.ttl.default_ttl"],
      [{ ttl: { refresh_on_read: "yes" } }, "store.ttl.refresh_on_read"],
      [{ ttl: { sweep_interval_minutes: -1 } }, "store.ttl.sweep_interval_minutes"],
      [{ index: { embed: "./e.ts:e", dims: 1.5 } }, "store.index.dims"],
      [{ index: { dims: 4 } }, "store.index.embed"],
      [{ index: { embed: "./e.ts:e", dims: 4, fields: [] } }, "store.index.fields"],
    ] as const) {
      const read = () => readStoreConfig(projectFile(store));
      expect(read).toThrow(ProjectError);
      expect(read).toThrow(key);
    }
  });

  it("loads an Embeddings instance or a function as the embedder", async () => {
    const config = projectFile(undefined);
    for (const exportName of ["keywordEmbeddings", "embedKeywords"]) {
      const index = await loadStoreIndex(config, {
        embed: `${embeddingsModule}:${exportName}`,
        dims: 4,
        fields: ["$"],
      });
      expect(await index.embeddings.embedDocuments(["cat tea", "car"])).toEqual([
        [1, 0, 1, 0],
        [0, 0, 0, 1],
      ]);
      expect(await index.embeddings.embedQuery("dog")).toEqual([0, 1, 0, 0]);
    }
  });

  it("refuses provider names, missing modules and exports that cannot embed, at start", async () => {
    const config = projectFile(undefined);
    const load = (embed: string) => loadStoreIndex(config, { embed, dims: 4, fields: ["$"] });
    await expect(load("openai:text-embedding-3-small")).rejects.toThrow(/must name a module export/);
    await expect(load("./missing.ts:embed")).rejects.toThrow(/cannot load store.index.embed/);
    await expect(load(`${embeddingsModule}:TOPICS`)).rejects.toThrow(/neither an Embeddings instance nor a function/);
  });
});
