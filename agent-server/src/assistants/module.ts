import type { ServerModule } from "../app.ts";
import type { ThreadService } from "../threads/service.ts";
import { assistantRoutes } from "./routes.ts";
import { AssistantService } from "./service.ts";

export interface AssistantsModule extends ServerModule {
  /** Available once the module started. */
  service(): AssistantService;
}

/** Assistant routes; `threads` deletes an assistant's threads with it when asked to. */
export function assistantsModule(threads: () => ThreadService): AssistantsModule {
  let started: AssistantService | undefined;
  const service = () => {
    if (!started) throw new Error("the assistants module has not started");
    return started;
  };
  return {
    name: "assistants",
    service,
    start: (ctx) => {
      started = new AssistantService(ctx, threads);
    },
    routes: () => assistantRoutes(service()),
  };
}
