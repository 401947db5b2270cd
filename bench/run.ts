import { readdirSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { startRedisServer } from "../testing/redis-server.ts";
import type { BenchModule, BenchResult } from "./types.ts";

/** Files in bench/ that are not areas. */
const NOT_AREAS = new Set(["run.ts", "types.ts"]);

function meets(result: BenchResult): string {
  const match = /^(>=|<=)\s*([\d.]+)$/.exec(result.target ?? "");
  if (!match) return "";
  const goal = Number(match[2]);
  return (match[1] === ">=" ? result.value >= goal : result.value <= goal) ? "ok" : "MISSED";
}

function printTable(rows: BenchResult[]): void {
  const table = [
    ["name", "value", "unit", "target", ""],
    ...rows.map((r) => [r.name, String(r.value), r.unit, r.target ?? "", meets(r)]),
  ];
  const widths = table[0]?.map((_, column) => Math.max(...table.map((row) => (row[column] ?? "").length))) ?? [];
  for (const row of table) console.log(row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(" | "));
}

/** Runs every `bench/<area>.ts` against a throw-away redis-server and prints one table. */
async function main(): Promise<void> {
  const here = dirname(fileURLToPath(import.meta.url));
  const only = process.argv.slice(2);
  const areas = readdirSync(here)
    .filter((file) => file.endsWith(".ts") && !NOT_AREAS.has(file))
    .filter((file) => only.length === 0 || only.includes(basename(file, ".ts")))
    .sort();
  const redis = await startRedisServer();
  const results: BenchResult[] = [];
  let failed = false;
  try {
    for (const file of areas) {
      console.error(`bench: ${file} …`);
      try {
        const module = (await import(pathToFileURL(join(here, file)).href)) as BenchModule;
        results.push(...(await module.run(redis.url)));
      } catch (error) {
        failed = true;
        console.error(`bench: ${file} failed:`, error);
      }
    }
  } finally {
    await redis.stop();
  }
  // Figures only compare across runs on an otherwise idle machine; say how busy this one was.
  console.log(
    `${cpus().length} CPUs, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  printTable(results);
  if (failed) process.exitCode = 1;
}

await main();
