import { startControlPlane } from "./app.ts";
import { ConfigError, loadConfig } from "./config.ts";

try {
  const running = await startControlPlane(loadConfig());
  const stop = () => {
    void running.close().then(() => process.exit(0));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`control-plane: ${error.message}`);
    process.exit(2);
  }
  throw error;
}
