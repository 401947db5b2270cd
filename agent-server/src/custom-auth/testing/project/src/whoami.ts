import { Annotation, type LangGraphRunnableConfig, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({
  input: Annotation<string>,
  user: Annotation<string>,
  permissions: Annotation<string[]>,
  team: Annotation<string>,
});

/** Answers with the user the server passed in `config.configurable`, as the reference passes it. */
export const graph = new StateGraph(State)
  .addNode("whoami", (_state, config: LangGraphRunnableConfig) => {
    const configurable = config.configurable ?? {};
    const user = configurable.langgraph_auth_user as { identity?: string; team?: string } | undefined;
    return {
      user: `${String(configurable.langgraph_auth_user_id)}/${String(user?.identity)}`,
      permissions: (configurable.langgraph_auth_permissions as string[] | undefined) ?? [],
      team: user?.team ?? "none",
    };
  })
  .addEdge("__start__", "whoami")
  .compile();
