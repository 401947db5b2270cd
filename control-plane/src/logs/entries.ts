import { LOG_LEVELS, type LogEntry, type LogLevel } from "./schemas.ts";

/** An entry and where it sorts: by time, then pod, then line (the failure reason of a revision first). */
export interface KeyedEntry {
  entry: LogEntry;
  key: SortKey;
}
type SortKey = [time: number, pod: string, line: number];

/** What `pods/log?timestamps=true` returned for one pod. */
export interface PodLog {
  pod: string;
  revisionId: string | null;
  text: string;
}

/** pino's numeric levels, and the names structured loggers (pino, Python's logging, structlog) write. */
function levelOf(value: unknown): LogLevel {
  if (typeof value === "number") {
    if (value >= 60) return "CRITICAL";
    if (value >= 50) return "ERROR";
    if (value >= 40) return "WARNING";
    if (value >= 30) return "INFO";
    return "DEBUG";
  }
  const name = typeof value === "string" ? value.toUpperCase() : "";
  if (name === "FATAL" || name === "CRITICAL") return "CRITICAL";
  if (name === "ERROR") return "ERROR";
  if (name === "WARN" || name === "WARNING") return "WARNING";
  if (name === "DEBUG" || name === "TRACE") return "DEBUG";
  return "INFO";
}

const text = (value: unknown) => (typeof value === "string" ? value : undefined);

/**
 * The entries of one pod's log: each line starts with the time Kubernetes recorded it. A JSON line
 * gives its level, message (`msg`, `message` or `event`) and `run_id`; any other line is INFO text.
 */
export function parsePodLog({ pod, revisionId, text: log }: PodLog): KeyedEntry[] {
  const entries: KeyedEntry[] = [];
  log.split("\n").forEach((line, index) => {
    const space = line.indexOf(" ");
    const time = Date.parse(space > 0 ? line.slice(0, space) : "");
    if (Number.isNaN(time)) return;
    const content = line.slice(space + 1);
    let fields: Record<string, unknown> | undefined;
    if (content.startsWith("{")) {
      try {
        const parsed: unknown = JSON.parse(content);
        if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) fields = parsed as Record<string, unknown>;
      } catch {
        // not JSON after all: kept as text
      }
    }
    entries.push({
      key: [time, pod, index],
      entry: {
        id: `${pod}:${index}`,
        timestamp: new Date(time).toISOString(),
        level: fields ? levelOf(fields.level ?? fields.levelname ?? fields.severity) : "INFO",
        message: (fields && (text(fields.msg) ?? text(fields.message) ?? text(fields.event))) ?? content,
        pod_name: pod,
        revision_id: revisionId,
        run_id: (fields && text(fields.run_id)) ?? null,
      },
    });
  });
  return entries;
}

/** The reason a revision failed, as the first entry of its deploy log (there may be no pod log at all). */
export function failureEntry(revisionId: string, message: string, at: string): KeyedEntry {
  const time = Date.parse(at);
  return {
    key: [time, "", -1],
    entry: {
      id: `revision:${revisionId}`,
      timestamp: new Date(time).toISOString(),
      level: "ERROR",
      message,
      pod_name: null,
      revision_id: revisionId,
      run_id: null,
    },
  };
}

export interface LogFilter {
  /** Inclusive, epoch ms. */
  start?: number;
  /** Exclusive, epoch ms. */
  end?: number;
  /** Case-insensitive substring of the message. */
  query?: string;
  /** This level or a more severe one. */
  level?: LogLevel;
  runId?: string;
}

export function matches(filter: LogFilter): (keyed: KeyedEntry) => boolean {
  const needle = filter.query?.toLowerCase();
  const minimum = filter.level ? LOG_LEVELS.indexOf(filter.level) : 0;
  return ({ entry, key: [time] }) =>
    (filter.start === undefined || time >= filter.start) &&
    (filter.end === undefined || time < filter.end) &&
    (needle === undefined || entry.message.toLowerCase().includes(needle)) &&
    LOG_LEVELS.indexOf(entry.level) >= minimum &&
    (filter.runId === undefined || entry.run_id === filter.runId);
}

function compare(a: SortKey, b: SortKey): number {
  return a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0) || a[2] - b[2];
}

/** Thrown for a cursor this API did not hand out. */
export class BadCursor extends Error {}

export function encodeCursor(key: SortKey): string {
  return Buffer.from(JSON.stringify(key)).toString("base64url");
}

export function decodeCursor(cursor: string): SortKey {
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw new BadCursor();
  }
  if (
    !Array.isArray(key) ||
    key.length !== 3 ||
    typeof key[0] !== "number" ||
    typeof key[1] !== "string" ||
    !Number.isInteger(key[2])
  ) {
    throw new BadCursor();
  }
  return key as SortKey;
}

/**
 * One page in `order` after `cursor` (the key of the last entry of the previous page, so that lines
 * written meanwhile neither shift nor repeat entries), and the cursor of the next page (null: none).
 */
export function page(
  entries: KeyedEntry[],
  order: "asc" | "desc",
  limit: number,
  cursor: string | null | undefined,
): { entries: LogEntry[]; next: string | null } {
  const sign = order === "asc" ? 1 : -1;
  const after = cursor ? decodeCursor(cursor) : undefined;
  const sorted = entries
    .filter((keyed) => after === undefined || sign * compare(keyed.key, after) > 0)
    .sort((a, b) => sign * compare(a.key, b.key));
  const slice = sorted.slice(0, limit);
  const last = slice.at(-1);
  return {
    entries: slice.map((keyed) => keyed.entry),
    next: sorted.length > limit && last ? encodeCursor(last.key) : null,
  };
}
