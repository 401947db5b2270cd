import { Annotation, type LangGraphRunnableConfig, StateGraph } from "@langchain/langgraph";
import type { RemoveUIMessage, UIMessage } from "@langchain/langgraph-sdk/react-ui";
import { typedUi, uiMessageReducer } from "@langchain/langgraph-sdk/react-ui/server";

// The state a generative UI graph keeps: its UI messages under `ui`, merged by the SDK's reducer.
const State = Annotation.Root({
  city: Annotation<string>,
  ui: Annotation<UIMessage[], UIMessage | RemoveUIMessage | (UIMessage | RemoveUIMessage)[]>({
    reducer: uiMessageReducer,
    default: () => [],
  }),
});

export const graph = new StateGraph(State)
  .addNode("forecast", async (state: typeof State.State, config: LangGraphRunnableConfig) => {
    const ui = typedUi(config);
    // A stable id, so both servers stream the same message.
    ui.push({ id: `weather-${state.city}`, name: "weather", props: { city: state.city, temperature: 21 } });
    return {};
  })
  .addEdge("__start__", "forecast")
  .compile();
