import { existsSync } from "node:fs";
import { basename, relative, resolve, sep } from "node:path";
import { build, type Message, type Plugin } from "esbuild";
import { z } from "zod";
import { ProjectError, readProjectSection } from "../graphs/project.ts";

/** One file of a bundle, served under `/ui/{namespace}/{basename}`. */
export interface UiAsset {
  basename: string;
  contents: Uint8Array;
}

/**
 * Modules the page provides instead of the bundle: `LoadExternalComponent` hands out its own
 * React, so the component renders in the page's React tree (hooks and context work).
 */
const PAGE_MODULES = ["react", "react-dom", "@langchain/langgraph-sdk", "@langchain/langgraph-sdk/react-ui"];

/**
 * What `LoadExternalComponent` calls once the script has loaded (`render(name, shadowRootId)`):
 * the component store the SDK keeps on `window` renders the named component into the shadow
 * root the SDK created. Same protocol as the reference server's bundler.
 */
const RENDERER = `
const STORE_SYMBOL = Symbol.for("LGUI_EXT_STORE");
function createRenderer(components) {
  return (name, shadowRootId) => {
    const root = document.getElementById(shadowRootId).shadowRoot;
    const renderEl = document.createElement("div");
    root.appendChild(renderEl);
    window[STORE_SYMBOL].respond(shadowRootId, components[name], renderEl);
  };
}`;

/** The `ui` and `ui_config` sections of `langgraph.json`: namespace (usually a graph id) → components file. */
export const UiSection = z.record(z.string().min(1), z.string().min(1));
export const UiConfigSection = z.strictObject({ shared: z.array(z.string().min(1)).optional() });

export interface UiProject {
  root: string;
  ui: Record<string, string>;
  shared: string[];
}

export function readUiProject(configPath: string, root: string): UiProject {
  return {
    root,
    ui: readProjectSection(configPath, "ui", UiSection),
    shared: readProjectSection(configPath, "ui_config", UiConfigSection).shared ?? [],
  };
}

/** The browser global the bundle assigns its exports to; the HTML of `POST /ui/{namespace}` calls it. */
export const globalNameOf = (namespace: string) => `__LGUI_${namespace.replace(/[^a-zA-Z0-9]/g, "_")}`;

const describe = (message: Message) => {
  const at = message.location ? `${message.location.file}:${message.location.line}:${message.location.column}: ` : "";
  return `${at}${message.text}`;
};

/** The default export of the components file, wrapped in the renderer, as the bundle's entry point. */
function entrypoint(importPath: string, root: string): Plugin {
  return {
    name: "ui-entrypoint",
    setup(builder) {
      builder.onResolve({ filter: /^entrypoint$/ }, () => ({ path: "entrypoint", namespace: "ui-entrypoint" }));
      builder.onLoad({ filter: /.*/, namespace: "ui-entrypoint" }, () => ({
        resolveDir: root,
        loader: "tsx",
        contents: `import ui from ${JSON.stringify(importPath)};\n${RENDERER}\nexport const render = createRenderer(ui);`,
      }));
    },
  };
}

/**
 * Bundles the components of one `ui` entry for the browser (`entrypoint.js`, plus
 * `entrypoint.css` when they import CSS). A missing file or code esbuild cannot build is a
 * ProjectError naming the entry and where the problem is.
 */
export async function bundleUi(namespace: string, file: string, project: UiProject): Promise<UiAsset[]> {
  const where = `ui.${namespace}`;
  const fullPath = resolve(project.root, file);
  const fromRoot = relative(project.root, fullPath).split(sep).join("/");
  if (fromRoot.startsWith("../")) throw new ProjectError(`${where}: ${file} is outside the project folder`);
  if (!existsSync(fullPath)) throw new ProjectError(`${where}: ${fullPath} does not exist`);
  try {
    const result = await build({
      entryPoints: ["entrypoint"],
      bundle: true,
      write: false,
      outdir: resolve(project.root, "dist"),
      platform: "browser",
      target: "es2020",
      jsx: "automatic",
      // Subpaths (`react/jsx-runtime`) are external with their package.
      external: [...PAGE_MODULES, ...project.shared],
      globalName: globalNameOf(namespace),
      absWorkingDir: project.root,
      logLevel: "silent",
      plugins: [entrypoint(`./${fromRoot}`, project.root)],
    });
    const encoder = new TextEncoder();
    return (result.outputFiles ?? []).map((output) => ({
      basename: basename(output.path),
      // The bundle is a classic script: its imports of the page's modules go to the resolver the
      // SDK's `LoadExternalComponent` installs on `window`, not to a `require` the browser lacks.
      contents: output.path.endsWith(".js")
        ? encoder.encode(
            output.text.replaceAll(
              `typeof require !== "undefined" ? require`,
              `typeof globalThis[Symbol.for("LGUI_REQUIRE")] !== "undefined" ? globalThis[Symbol.for("LGUI_REQUIRE")]`,
            ),
          )
        : output.contents,
    }));
  } catch (error) {
    const errors = (error as { errors?: Message[] }).errors;
    if (!errors?.length) throw error;
    throw new ProjectError(`${where}: cannot bundle ${fullPath}: ${errors.map(describe).join("; ")}`);
  }
}
