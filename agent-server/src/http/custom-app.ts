import { dirname } from "node:path";
import type { RequestHandler } from "express";
import type { ServerModule } from "../app.ts";
import type { ServerContext } from "../context.ts";
import { GraphLoadError, importProjectExport, type ModuleLoader } from "../graphs/load.ts";
import { parseGraphSpec } from "../graphs/project.ts";
import { readHttpSection } from "./cors.ts";

const isHandler = (value: unknown): value is RequestHandler => typeof value === "function";

/**
 * The project's own express app or router (`http.app: "./src/app.ts:app"`), mounted after
 * authentication and before the API routes, so it can add routes (and see parsed JSON bodies).
 */
export function customAppModule(): ServerModule {
  let loaded: { handler: RequestHandler; loader: ModuleLoader } | undefined;
  return {
    name: "custom-app",
    async start(ctx: ServerContext) {
      const spec = readHttpSection(ctx.config.configPath).app;
      if (!spec) return;
      const { modulePath, exportName } = parseGraphSpec("http.app", spec, dirname(ctx.config.configPath));
      const { exported, loader } = await importProjectExport("http.app", modulePath, exportName);
      if (!isHandler(exported)) {
        await loader.close();
        throw new GraphLoadError(`http.app: ${modulePath} export "${exportName}" is not an express app or router`);
      }
      loaded = { handler: exported, loader };
    },
    middleware: () => (loaded ? [loaded.handler] : []),
    async stop() {
      await loaded?.loader.close();
      loaded = undefined;
    },
  };
}
