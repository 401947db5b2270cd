import { isPrefixMatch, normalizeNamespaceSegment } from "@langchain/langgraph/stream";
import type { RunEventLog } from "../stream/event-log.ts";
import { droppedIds } from "../stream/reader.ts";
import { type ProtocolEvent, toProtocolEvent } from "./events.ts";

/** `agent.getTree`'s answer: one node per namespace a run's events named, children below it. */
export interface AgentTreeNode {
  namespace: string[];
  status: string;
  graph_name: string;
  children?: AgentTreeNode[];
}

interface NamespaceInfo {
  namespace: string[];
  status: string;
  graphName: string;
}

const keyOf = (namespace: string[]) => namespace.join("\0");

/** A subgraph's name from its namespace segment (`agent:<task id>` → `agent`), as the reference guesses it. */
const guessGraphName = (namespace: string[]) => {
  const last = namespace.at(-1);
  return last === undefined ? "root" : normalizeNamespaceSegment(last);
};

/**
 * The agent tree of one protocol run, built from its events in order as the reference server's
 * protocol session keeps it: a `lifecycle` event sets its namespace's status (and graph name),
 * any other event adds its namespace and their prefixes as `started` when not yet known.
 */
export class AgentTree {
  readonly #rootGraphName: string;
  readonly #namespaces = new Map<string, NamespaceInfo>();

  constructor(rootGraphName: string) {
    this.#rootGraphName = rootGraphName;
  }

  add(event: ProtocolEvent): void {
    const { namespace } = event.params;
    if (event.method === "lifecycle") {
      const data = event.params.data as { event?: string; graph_name?: string };
      const existing = this.#namespaces.get(keyOf(namespace));
      const graphName =
        data.graph_name ??
        existing?.graphName ??
        (namespace.length === 0 ? this.#rootGraphName : guessGraphName(namespace));
      this.#namespaces.set(keyOf(namespace), { namespace, status: String(data.event), graphName });
      return;
    }
    for (let length = 1; length <= namespace.length; length++) {
      const prefix = namespace.slice(0, length);
      if (this.#namespaces.has(keyOf(prefix))) continue;
      this.#namespaces.set(keyOf(prefix), { namespace: prefix, status: "started", graphName: guessGraphName(prefix) });
    }
  }

  /** The node of `namespace` (the root by default) with its subtree. */
  node(namespace: string[] = []): AgentTreeNode {
    const current = this.#namespaces.get(keyOf(namespace)) ?? {
      namespace,
      status: "started",
      graphName: namespace.length === 0 ? this.#rootGraphName : guessGraphName(namespace),
    };
    const children = [...this.#namespaces.values()]
      .filter((child) => child.namespace.length === namespace.length + 1 && isPrefixMatch(child.namespace, namespace))
      .sort((x, y) => JSON.stringify(x.namespace).localeCompare(JSON.stringify(y.namespace)))
      .map((child) => this.node(child.namespace));
    return {
      namespace: current.namespace,
      status: current.status,
      graph_name: current.graphName,
      ...(children.length > 0 && { children }),
    };
  }
}

/** Entries, and bytes of their data, read from a run's log in one call. */
const PAGE = 500;
const PAGE_BYTES = 1 << 18;

/** `agent.getTree`'s result: the tree, and what was missing to build it, as streams report it. */
export interface AgentTreeResult {
  tree: AgentTreeNode;
  /** The log had dropped the run's earliest events (its entry cap): the tree is built from the rest. */
  events_dropped?: string;
}

/**
 * The agent tree of a thread's protocol run (its `ordinal`, from 1) as its log holds it now,
 * read a page at a time: a running run's tree so far, a finished run's whole tree.
 */
export async function runAgentTree(
  events: RunEventLog,
  run: { ordinal: number; run_id: string; graph_id: string },
): Promise<AgentTreeResult> {
  const tree = new AgentTree(run.graph_id);
  let after = -1;
  let eventsDropped: string | undefined;
  for (;;) {
    const page = await events.range(run.run_id, after, PAGE, PAGE_BYTES);
    const dropped = after === -1 && page[0] ? droppedIds(page[0], after) : undefined;
    if (dropped) {
      eventsDropped = `Events ${dropped.from} to ${dropped.to} of this run were dropped (its log keeps only the latest events): the tree is built from the events after them`;
    }
    for (const entry of page) {
      const sent = toProtocolEvent(run.ordinal, run.graph_id, entry);
      if (sent) tree.add(sent.event);
      after = entry.id;
    }
    const bytes = page.reduce((sum, entry) => sum + entry.data.length, 0);
    if (page.length < PAGE && bytes < PAGE_BYTES) {
      return { tree: tree.node(), ...(eventsDropped && { events_dropped: eventsDropped }) };
    }
  }
}
