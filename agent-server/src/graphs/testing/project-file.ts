import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A `langgraph.json` in a fresh temporary folder with one graph and the given top-level sections. */
export function writeProjectFile(sections: Record<string, unknown>): string {
  const path = join(mkdtempSync(join(tmpdir(), "project-")), "langgraph.json");
  writeFileSync(path, JSON.stringify({ graphs: { agent: "./agent.ts:graph" }, ...sections }));
  return path;
}
