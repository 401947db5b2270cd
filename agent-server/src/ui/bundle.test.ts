import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ProjectError } from "../graphs/project.ts";
import { bundleUi, readUiProject } from "./bundle.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A project folder with `langgraph.json` (`ui` and `ui_config` as given) and the listed files. */
function project(config: Record<string, unknown>, files: Record<string, string> = {}) {
  const root = mkdtempSync(join(tmpdir(), "agentplane-ui-"));
  dirs.push(root);
  const configPath = join(root, "langgraph.json");
  writeFileSync(configPath, JSON.stringify({ graphs: { agent: "./agent.ts:graph" }, ...config }));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(root, name, ".."), { recursive: true });
    writeFileSync(join(root, name), text);
  }
  return readUiProject(configPath, root);
}

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe("bundleUi", () => {
  it("bundles the components as a script that renders through the page's modules", async () => {
    const ui = project(
      { ui: { "my-agent": "./src/ui.tsx" }, ui_config: { shared: ["shared-lib"] } },
      {
        "src/ui.tsx": `import { format } from "shared-lib";\nimport "./ui.css";\nexport default { card: () => <p>{format("x")}</p> };`,
        "src/ui.css": ".card { color: red; }",
      },
    );
    const assets = await bundleUi("my-agent", "./src/ui.tsx", ui);
    expect(assets.map((asset) => asset.basename).sort()).toEqual(["entrypoint.css", "entrypoint.js"]);
    const js = decode(assets.find((asset) => asset.basename === "entrypoint.js")?.contents ?? new Uint8Array());
    // The global the HTML's onload calls, named after the namespace.
    expect(js).toMatch(/^var __LGUI_my_agent = /);
    // React's JSX runtime and shared modules come from the page, through the SDK's resolver.
    expect(js).toContain('__require("react/jsx-runtime")');
    expect(js).toContain('__require("shared-lib")');
    expect(js).toContain('globalThis[Symbol.for("LGUI_REQUIRE")]');
    expect(js).not.toContain('typeof require !== "undefined" ? require');
    expect(decode(assets.find((asset) => asset.basename === "entrypoint.css")?.contents ?? new Uint8Array())).toContain(
      ".card",
    );
  });

  it("a missing components file is a start-up error naming the entry", async () => {
    const ui = project({ ui: { agent: "./src/missing.tsx" } });
    await expect(bundleUi("agent", "./src/missing.tsx", ui)).rejects.toThrow(
      new ProjectError(`ui.agent: ${join(ui.root, "src/missing.tsx")} does not exist`),
    );
  });

  it("a file outside the project folder is refused", async () => {
    const ui = project({ ui: { agent: "../elsewhere.tsx" } });
    await expect(bundleUi("agent", "../elsewhere.tsx", ui)).rejects.toThrow(
      /ui\.agent: \.\.\/elsewhere\.tsx is outside/,
    );
  });

  it("a syntax error is a start-up error with the file, line and esbuild's message", async () => {
    const ui = project({ ui: { agent: "./ui.tsx" } }, { "ui.tsx": "export default { card: () => <p>unclosed };\n" });
    const failure = bundleUi("agent", "./ui.tsx", ui);
    await expect(failure).rejects.toBeInstanceOf(ProjectError);
    await expect(failure).rejects.toThrow(/^ui\.agent: cannot bundle .*ui\.tsx: ui\.tsx:1:\d+: /);
  });

  it("a ui section that is not a map of file paths is refused", () => {
    expect(() => project({ ui: { agent: 42 } })).toThrow(/ui\.agent .*expected string/i);
    expect(() => project({ ui_config: { shared: ["x"], other: true } })).toThrow(/ui_config/);
  });
});
