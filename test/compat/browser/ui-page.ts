import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { build } from "esbuild";
import { type Browser, chromium } from "playwright-core";

/**
 * The generative UI test page (ui-page.tsx), bundled with esbuild as an app would be, served on
 * its own origin (so the API calls are cross-origin, as from a real web app), and Debian's
 * Chromium to open it with, driven by playwright-core.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export interface PageServer {
  /** The page; append `?api=<server url>`. */
  url: string;
  close(): Promise<void>;
}

export async function servePage(): Promise<PageServer> {
  const bundle = await build({
    entryPoints: [new URL("./ui-page.tsx", import.meta.url).pathname],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    jsx: "automatic",
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "silent",
  });
  const script = bundle.outputFiles[0]?.contents ?? new Uint8Array();
  const html =
    '<!doctype html><html><body><div id="root"></div><script type="module" src="/page.js"></script></body></html>';
  const server = createServer((req, res) => {
    if (req.url === "/page.js") res.writeHead(200, { "content-type": "text/javascript" }).end(script);
    else if (req.url?.startsWith("/?") || req.url === "/")
      res.writeHead(200, { "content-type": "text/html" }).end(html);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Headless Chromium from the system (`.ci/run` installs Debian's `chromium`). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"] });
}
