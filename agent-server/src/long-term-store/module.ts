import type { ServerModule } from "../app.ts";
import { storeRoutes } from "./routes.ts";
import { type StoreApiSettings, storeApiSettingsFromEnv } from "./settings.ts";

/** `/store/*`, and the store's expiry sweeper for as long as the server runs. */
export function storeApiModule(settings: StoreApiSettings = storeApiSettingsFromEnv()): ServerModule {
  return {
    name: "store",
    routes: (ctx) => storeRoutes(ctx, settings),
    start: (ctx) => ctx.storage.store.start(),
    stop: (ctx) => ctx.storage.store.stop(),
  };
}
