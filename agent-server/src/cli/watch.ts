import { type Dirent, type FSWatcher, lstatSync, readdirSync, watch } from "node:fs";
import { join, relative, sep } from "node:path";

/** Folders whose changes never affect the graphs being served: never watched. */
const IGNORED = new Set(["node_modules", ".git", "dist", ".agentplane", ".langgraph_api"]);

export interface ProjectWatcher {
  close(): void;
}

/**
 * Calls `onChange` once per burst of file changes under `root` (debounced), with the project-relative
 * path of the last file changed. One plain watch per directory, dependency and build folders skipped:
 * Node's recursive watch on Linux sets a watch on every file, node_modules included, and follows
 * files by inode, so it missed atomic saves (editors and `sed -i` write a temporary file and rename
 * it over the original). A directory watch sees the rename under the file's own name.
 */
export function watchProject(root: string, onChange: (file: string) => void, debounceMs = 300): ProjectWatcher {
  const watchers = new Map<string, FSWatcher>();
  let timer: NodeJS.Timeout | undefined;
  let lastFile = "";
  let closed = false;

  const changed = (file: string) => {
    lastFile = file;
    clearTimeout(timer);
    timer = setTimeout(() => onChange(lastFile), debounceMs);
  };

  const unwatch = (dir: string) => {
    for (const [path, watcher] of watchers) {
      if (path === dir || path.startsWith(`${dir}${sep}`)) {
        watcher.close();
        watchers.delete(path);
      }
    }
  };

  const watchDir = (dir: string) => {
    if (closed || watchers.has(dir)) return;
    let watcher: FSWatcher;
    try {
      watcher = watch(dir, (_event, name) => onEvent(dir, name));
    } catch {
      return; // removed before it could be watched
    }
    watcher.on("error", () => unwatch(dir));
    watchers.set(dir, watcher);
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (entry.isDirectory() && !IGNORED.has(entry.name)) watchDir(join(dir, entry.name));
    }
  };

  const onEvent = (dir: string, name: string | null) => {
    if (closed || !name || IGNORED.has(name)) return;
    const path = join(dir, name);
    let isDirectory = false;
    try {
      isDirectory = lstatSync(path).isDirectory();
    } catch {
      unwatch(path); // removed or renamed away: a directory's watches go with it
    }
    // A directory created or moved in: its files are watched from now on.
    if (isDirectory) watchDir(path);
    changed(relative(root, path));
  };

  watchDir(root);
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}
