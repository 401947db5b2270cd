import { dirname, extname } from "node:path";
import { defineRoute, HttpError } from "@agentplane/common";
import type { Request } from "express";
import { z } from "zod";
import type { ServerModule } from "../app.ts";
import { bundleUi, globalNameOf, readUiProject, type UiAsset } from "./bundle.ts";

const TAG = "Generative UI";

const CONTENT_TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
};

const Namespace = z.object({ namespace: z.string().min(1) });

/**
 * Where the browser fetches the assets. As the reference server: `http:` for a local host,
 * scheme-relative otherwise (the page's own scheme, so HTTPS pages behind a proxy load them).
 */
function assetBase(req: Request, namespace: string): string {
  const host = req.get("host") ?? "";
  const local = ["localhost", "127.0.0.1"].some((name) => host === name || host.startsWith(`${name}:`));
  return `${local ? "http:" : ""}//${host}/ui/${namespace}`;
}

/**
 * The HTML `LoadExternalComponent` inserts into its shadow root: the stylesheets, then the
 * script that renders component `name` once loaded.
 */
function componentHtml(assets: UiAsset[], base: string, namespace: string, name: string): string {
  const html: string[] = [];
  for (const css of assets.filter((asset) => extname(asset.basename) === ".css")) {
    html.push(`<link rel="stylesheet" href="${base}/${css.basename}" />`);
  }
  const js = assets.find((asset) => extname(asset.basename) === ".js");
  if (js) {
    html.push(
      `<script src="${base}/${js.basename}" onload='${globalNameOf(namespace)}.render(${JSON.stringify(name)}, "{{shadowRootId}}")'></script>`,
    );
  }
  return html.join("\n");
}

/**
 * Generative UI: the components of `langgraph.json` `ui`, bundled with esbuild at start (a bad
 * entry stops the start), served as `@langchain/langgraph-sdk/react-ui` loads them.
 */
export function uiModule(): ServerModule {
  const bundles = new Map<string, UiAsset[]>();
  const assetsOf = (namespace: string) => {
    const assets = bundles.get(namespace);
    if (!assets) throw new HttpError(404, `UI not found for "${namespace}"`);
    return assets;
  };
  return {
    name: "ui",
    async start(ctx) {
      const project = readUiProject(ctx.config.configPath, dirname(ctx.config.configPath));
      for (const [namespace, file] of Object.entries(project.ui)) {
        bundles.set(namespace, await bundleUi(namespace, file, project));
      }
    },
    routes: () => [
      defineRoute({
        method: "post",
        path: "/ui/:namespace",
        operationId: "get_ui_component",
        tag: TAG,
        summary: "Get the HTML that loads a UI component",
        params: Namespace,
        body: z.object({ name: z.string().min(1) }),
        response: z.string().meta({ description: "HTML: stylesheet links and the script that renders the component" }),
        errors: [404],
        handler: ({ params, body, req, res }) => {
          const assets = assetsOf(params.namespace);
          const html = componentHtml(assets, assetBase(req, params.namespace), params.namespace, body.name);
          res.type("text/html; charset=utf-8").send(html);
        },
      }),
      defineRoute({
        method: "get",
        path: "/ui/:namespace/:basename",
        operationId: "get_ui_asset",
        tag: TAG,
        summary: "Get a file of a UI bundle",
        // Browsers load it from a <script> or <link> tag, which sends no API key.
        public: true,
        params: Namespace.extend({ basename: z.string().min(1) }),
        response: z.string().meta({ description: "The file (JavaScript or CSS)" }),
        errors: [404],
        handler: ({ params, res }) => {
          const asset = assetsOf(params.namespace).find((item) => item.basename === params.basename);
          if (!asset) throw new HttpError(404, `UI file "${params.basename}" not found for "${params.namespace}"`);
          res
            .type(CONTENT_TYPES[extname(asset.basename)] ?? "application/octet-stream")
            .send(Buffer.from(asset.contents));
        },
      }),
    ],
  };
}
