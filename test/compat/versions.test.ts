import { describe, expect, it } from "vitest";
import { collect, type Scenario, sdkVersions, threadState, useCompatServers } from "./harness.ts";

/**
 * Projects on older LangGraph.js releases: each project directory under projects/langgraph-<v>
 * is an npm workspace that installs its own `@langchain/langgraph` (and `@langchain/core`), so
 * its graph runs on that version, as a user's project would. The basics a chat client relies on
 * must behave as on the reference: streamed values, message tokens and updates, state, history,
 * an interrupt and its resume; and the schemas of a zod state, whose metadata lives in the
 * project's copy of LangGraph.js, not the server's.
 *
 * The reference (langgraph-api 1.5.1) cannot load these projects: it resolves its own imports of
 * `@langchain/langgraph/stream` from the project, which LangGraph.js before 1.4 does not export,
 * and exits. So it serves the same graph on the repository's LangGraph.js (projects/
 * langgraph-current), and ours on the old release must answer what the reference answers there.
 */

/**
 * What older releases produce differently from LangGraph.js 1.7 whatever the server (listed in
 * docs/compatibility.md); dropped before comparing.
 */
const RELEASE_DIFFERENCES: Record<string, Record<string, string>> = {
  "1.0": {
    result: "1.7 adds a finished task's result to state snapshots",
    tool_call_chunks: "1.7 stores a streamed AI message without its (empty) tool_call_chunks",
  },
};
RELEASE_DIFFERENCES["0.4"] = {
  ...RELEASE_DIFFERENCES["1.0"],
  __pregel_task_id: "0.4 adds the task id to the metadata of streamed message tokens",
  versions: "@langchain/core 1.x adds its version to that metadata; 0.4 projects use core 0.3",
};

const VERSIONS = Object.keys(RELEASE_DIFFERENCES).sort();
const referenceProject = new URL("./projects/langgraph-current/langgraph.json", import.meta.url).pathname;

// The project's versions differ; one SDK is enough to drive them (the other suites cover SDKs).
const [sdk] = (await sdkVersions()).available;

const chatBasics: Scenario = async ({ client }) => {
  const thread = await client.threads.create();
  const id = thread.thread_id;
  const input = { messages: [{ type: "human", content: "hello there" }] };
  const streamed = await collect(
    client.runs.stream(id, "chat", { input, streamMode: ["values", "messages-tuple", "updates"] }),
  );
  const waiting = threadState(await client.threads.getState(id));
  const resumed = await client.runs.wait(id, "chat", { command: { resume: "approved" } });
  const history = (await client.threads.getHistory(id)).map(threadState);
  const status = (await client.threads.get(id)).status;
  // The metadata event carries the run id only: the same shape on both, nothing to compare.
  return { streamed: streamed.filter((event) => event.event !== "metadata"), waiting, resumed, history, status };
};

describe.each(VERSIONS)("@langchain/langgraph %s project", (version) => {
  const project = new URL(`./projects/langgraph-${version}/langgraph.json`, import.meta.url).pathname;
  const servers = useCompatServers(project, {}, referenceProject);

  it("streams, keeps state and history, interrupts and resumes as the reference does on 1.x", async () => {
    if (!sdk) throw new Error("no SDK installed");
    const { ours } = await servers.compare(sdk, chatBasics, { ignoreKeys: RELEASE_DIFFERENCES[version] });
    expect(ours).toMatchObject({
      streamed: expect.arrayContaining([
        { event: "messages", data: [expect.objectContaining({ content: "You " }), expect.anything()] },
        {
          event: "updates",
          data: { agent: { messages: [expect.objectContaining({ content: "You said: hello there" })] } },
        },
      ]),
      waiting: { next: ["approve"], tasks: [{ interrupts: [{ value: { question: "Send this answer?" } }] }] },
      resumed: { verdict: "approved" },
      status: "idle",
    });
  });

  it("reads a zod state's schemas with the project's own LangGraph (withLangGraph metadata)", async () => {
    if (!sdk) throw new Error("no SDK installed");
    const { ours } = await servers.compare(sdk, async ({ client }) => client.assistants.getSchemas("profile"));
    expect(ours).toMatchObject({
      state_schema: { properties: { messages: { langgraph_type: "messages" }, topic: { type: "string" } } },
    });
  });
});
