import { useStream } from "@langchain/langgraph-sdk/react";
import { LoadExternalComponent, type UIMessage, uiMessageReducer } from "@langchain/langgraph-sdk/react-ui";
import { useEffect } from "react";
import { createRoot } from "react-dom/client";

/**
 * A generative UI page as the LangGraph.js docs write one: `useStream` runs the `weather` graph,
 * merges the UI messages it pushes (`custom` events) into `ui`, and `LoadExternalComponent`
 * fetches and renders each one's component from the server. `?api=<server url>`.
 */

type State = { city: string; ui?: UIMessage[] };

const apiUrl = new URLSearchParams(location.search).get("api") ?? "";

function Page() {
  const stream = useStream<State>({
    apiUrl,
    assistantId: "weather",
    onCustomEvent: (event, options) => {
      options.mutate((previous) => ({ ...previous, ui: uiMessageReducer(previous.ui ?? [], event as UIMessage) }));
    },
  });
  useEffect(() => {
    stream.submit({ city: "Lisbon" });
  }, []);
  return (
    <main>
      <p id="status">{stream.isLoading ? "running" : "done"}</p>
      {(stream.values.ui ?? []).map((message) => (
        <LoadExternalComponent key={message.id} stream={stream} message={message} meta={{ page: "the test page" }} />
      ))}
    </main>
  );
}

createRoot(document.getElementById("root") as HTMLElement).render(<Page />);
