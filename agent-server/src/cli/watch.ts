import { type FSWatcher, watch } from "node:fs";

/** Folders whose changes never affect the graphs being served. */
const IGNORED = /(^|\/)(node_modules|\.git|dist|\.agentplane|\.langgraph_api)(\/|$)/;

/**
 * Calls `onChange` once per burst of file changes under `root` (debounced), ignoring
 * dependency and build folders.
 */
export function watchProject(root: string, onChange: (file: string) => void, debounceMs = 300): FSWatcher {
  let timer: NodeJS.Timeout | undefined;
  let lastFile = "";
  const watcher = watch(root, { recursive: true }, (_event, file) => {
    if (!file || IGNORED.test(file)) return;
    lastFile = file;
    clearTimeout(timer);
    timer = setTimeout(() => onChange(lastFile), debounceMs);
  });
  watcher.on("close", () => clearTimeout(timer));
  return watcher;
}
