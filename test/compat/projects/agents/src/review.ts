import { Command, END, interrupt, START, StateGraph } from "@langchain/langgraph";
import { z } from "zod";

/** Human-in-the-loop inside a subgraph, on zod states: the parent drafts, the subgraph asks a human. */

const Draft = z.object({
  topic: z.string(),
  draft: z.string().optional(),
  verdict: z.string().optional(),
});

const approval = new StateGraph(Draft)
  .addNode("ask_human", (state) => {
    const answer = interrupt({ question: "Publish this draft?", draft: state.draft });
    return { verdict: String(answer) };
  })
  .addEdge(START, "ask_human")
  .compile();

const Article = Draft.extend({ published: z.boolean().optional() });

export const graph = new StateGraph(Article)
  .addNode("write", (state) => ({ draft: `A short note on ${state.topic}.` }))
  .addNode("approval", approval)
  .addNode(
    "decide",
    (state) => (state.verdict === "yes" ? new Command({ goto: "publish" }) : new Command({ goto: END })),
    { ends: ["publish", END] },
  )
  .addNode("publish", () => ({ published: true }))
  .addEdge(START, "write")
  .addEdge("write", "approval")
  .addEdge("approval", "decide")
  .addEdge("publish", END)
  .compile();
