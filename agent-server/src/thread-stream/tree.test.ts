import { describe, expect, it } from "vitest";
import type { ProtocolEvent } from "./events.ts";
import { AgentTree } from "./tree.ts";

let seq = 0;
const event = (method: string, namespace: string[], data: unknown = {}): ProtocolEvent => ({
  type: "event",
  event_id: String(++seq),
  seq,
  method,
  params: { namespace, timestamp: 0, data },
});

describe("agent tree", () => {
  it("is the root alone before any event", () => {
    expect(new AgentTree("graph").node()).toEqual({ namespace: [], status: "started", graph_name: "graph" });
  });

  it("takes statuses from lifecycle events and adds every namespace an event names, prefixes first", () => {
    const tree = new AgentTree("review");
    tree.add(event("lifecycle", [], { event: "running", graph_name: "review" }));
    tree.add(event("lifecycle", ["draft:1"], { event: "started", graph_name: "draft" }));
    tree.add(event("lifecycle", ["draft:1"], { event: "completed" }));
    // A namespace first seen below its parent: both are `started`, named after their segment.
    tree.add(event("values", ["approval:2", "ask:3"], { a: 1 }));
    tree.add(event("messages", [], { event: "message-start" }));
    tree.add(event("lifecycle", [], { event: "interrupted", graph_name: "review" }));
    expect(tree.node()).toEqual({
      namespace: [],
      status: "interrupted",
      graph_name: "review",
      children: [
        {
          namespace: ["approval:2"],
          status: "started",
          graph_name: "approval",
          children: [{ namespace: ["approval:2", "ask:3"], status: "started", graph_name: "ask" }],
        },
        { namespace: ["draft:1"], status: "completed", graph_name: "draft" },
      ],
    });
    expect(tree.node(["approval:2"]).children).toHaveLength(1);
  });
});
