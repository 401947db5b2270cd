import { Annotation, START, StateGraph } from "@langchain/langgraph";
import { Client } from "@langchain/langgraph-sdk";

const State = Annotation.Root({
  name: Annotation<string>,
  reply: Annotation<string>,
  assistants: Annotation<number>,
});

/** Calls the server it runs on through the SDK, without an apiUrl, as graphs on the platform do. */
export const graph = new StateGraph(State)
  .addNode("delegate", async (state) => {
    const client = new Client();
    const assistants = await client.assistants.search({ graphId: "agent" });
    const result = (await client.runs.wait(null, "agent", { input: { name: state.name } })) as { reply: string };
    return { reply: result.reply, assistants: assistants.length };
  })
  .addEdge(START, "delegate")
  .compile();
