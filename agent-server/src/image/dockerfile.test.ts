import { describe, expect, it } from "vitest";
import {
  BAKED_CONFIG_PATH,
  bakeConfig,
  detectPackageManager,
  type GraphProject,
  generateDockerfile,
  generateDockerignore,
  ImageConfigError,
} from "./dockerfile.ts";

const BASE = "agentplane/agent-server:test";

function project(overrides: Partial<GraphProject> & { files?: string[] } = {}): GraphProject {
  const { files = ["package.json", "package-lock.json", "langgraph.json"], ...rest } = overrides;
  return {
    configFile: "langgraph.json",
    config: { graphs: { agent: "./src/agent.ts:graph" } },
    packageJson: { dependencies: { "@langchain/langgraph": "^1.0.0" } },
    rootFiles: new Set(files),
    ...rest,
  };
}

function runLines(dockerfile: string): string[] {
  return dockerfile.split("\n").filter((line) => line.startsWith("RUN "));
}

describe("detectPackageManager", () => {
  it.each([
    [["package-lock.json"], {}, "npm"],
    [["npm-shrinkwrap.json"], {}, "npm"],
    [["yarn.lock"], {}, "yarn"],
    [["yarn.lock", ".yarnrc.yml"], {}, "yarn-berry"],
    [["yarn.lock"], { packageManager: "yarn@4.5.0" }, "yarn-berry"],
    [["pnpm-lock.yaml"], {}, "pnpm"],
    [["bun.lockb"], {}, "bun"],
    [["bun.lock"], {}, "bun"],
    [[], {}, "npm"],
    [[], { packageManager: "pnpm@9.1.0" }, "pnpm"],
    [["package-lock.json"], { packageManager: "pnpm@9.1.0" }, "npm"],
  ] as const)("%j with %j → %s", (files, packageJson, expected) => {
    expect(detectPackageManager({ rootFiles: new Set(files), packageJson })).toBe(expected);
  });
});

describe("generateDockerfile", () => {
  it("builds on the base image, installs with the lockfile, bakes the config and serves it", () => {
    const dockerfile = generateDockerfile(project(), { baseImage: BASE });
    expect(dockerfile.split("\n")[0]).toBe("# syntax=docker/dockerfile:1");
    expect(dockerfile).toContain(`FROM ${BASE}\n`);
    expect(dockerfile).toContain(
      "COPY package.json package-lock.json ./\nRUN NODE_ENV=development npm ci --no-audit --no-fund\nCOPY . .\n",
    );
    expect(dockerfile).toContain(`COPY <<"LANGGRAPH_JSON" ${BAKED_CONFIG_PATH}\n`);
    expect(dockerfile).toContain('"agent": "/deps/app/src/agent.ts:graph"');
    expect(dockerfile.trimEnd().split("\n").slice(-2)).toEqual([
      "USER 1000:1000",
      `CMD ["agent-server","serve","--config","${BAKED_CONFIG_PATH}"]`,
    ]);
  });

  it.each([
    [["yarn.lock"], {}, "RUN corepack enable && NODE_ENV=development yarn install --frozen-lockfile"],
    [["yarn.lock", ".yarnrc.yml"], {}, "RUN corepack enable && NODE_ENV=development yarn install --immutable"],
    [["pnpm-lock.yaml"], {}, "RUN corepack enable && NODE_ENV=development pnpm install --frozen-lockfile"],
    [["bun.lock"], {}, "RUN npm install --global bun && NODE_ENV=development bun install --frozen-lockfile"],
    [[], {}, "RUN NODE_ENV=development npm install --no-audit --no-fund"],
  ] as const)("installs %j projects with %s", (files, packageJson, expected) => {
    const dockerfile = generateDockerfile(project({ files: ["package.json", ...files], packageJson }), {
      baseImage: BASE,
    });
    expect(runLines(dockerfile)[0]).toBe(expected);
  });

  it("copies the install inputs that exist before the sources", () => {
    const dockerfile = generateDockerfile(
      project({ files: ["package.json", "pnpm-lock.yaml", "pnpm-workspace.yaml", ".npmrc", "src"] }),
      { baseImage: BASE },
    );
    expect(dockerfile).toContain("COPY package.json pnpm-lock.yaml .npmrc pnpm-workspace.yaml ./\n");
  });

  it("runs the project's build script with its package manager", () => {
    const withBuild = { scripts: { build: "tsc" }, devDependencies: { typescript: "^5" } };
    expect(runLines(generateDockerfile(project({ packageJson: withBuild }), { baseImage: BASE }))[1]).toBe(
      "RUN npm run build",
    );
    const pnpm = project({ files: ["package.json", "pnpm-lock.yaml", "tsconfig.json"], packageJson: withBuild });
    expect(runLines(generateDockerfile(pnpm, { baseImage: BASE }))[1]).toBe("RUN pnpm run build");
  });

  it("type-checks a TypeScript project without a build script, and skips it without TypeScript", () => {
    const ts = project({
      files: ["package.json", "package-lock.json", "tsconfig.json"],
      packageJson: { devDependencies: { typescript: "^5" } },
    });
    expect(runLines(generateDockerfile(ts, { baseImage: BASE }))[1]).toBe(
      "RUN node node_modules/typescript/bin/tsc --noEmit -p tsconfig.json",
    );
    const js = project({ files: ["package.json", "package-lock.json", "tsconfig.json"] });
    expect(runLines(generateDockerfile(js, { baseImage: BASE }))).toHaveLength(1);
  });

  it("appends dockerfile_lines as root, before the server user is restored", () => {
    const config = { graphs: { a: "./a.ts:g" }, dockerfile_lines: ["RUN apt-get update", "ENV FOO=bar"] };
    const dockerfile = generateDockerfile(project({ config }), { baseImage: BASE });
    const lines = dockerfile.split("\n");
    expect(lines.indexOf("ENV FOO=bar")).toBeGreaterThan(lines.indexOf("COPY . ."));
    expect(lines.indexOf("ENV FOO=bar")).toBeLessThan(lines.indexOf("USER 1000:1000"));
  });

  it.each([
    [{ graphs: { a: "./a.ts:g" }, node_version: "20" }, /node_version "20" is not supported/],
    [{ graphs: { a: "../outside/a.ts:g" } }, /graphs\.a "\.\.\/outside\/a\.ts:g" must be a path inside/],
    [{ graphs: { a: "/etc/a.ts:g" } }, /must be a path inside/],
    [{ graphs: { a: { path: "../../x.ts" } } }, /graphs\.a\.path/],
    [{ graphs: { a: "./a.ts:g" }, dockerfile_lines: "RUN x" }, /dockerfile_lines must be an array of strings/],
    [{ graphs: { a: "./a.ts:g" }, auth: { path: "../auth.ts:auth" } }, /auth\.path/],
  ])("refuses %j", (config, message) => {
    expect(() => generateDockerfile(project({ config }), { baseImage: BASE })).toThrow(ImageConfigError);
    expect(() => generateDockerfile(project({ config }), { baseImage: BASE })).toThrow(message);
  });

  it("accepts node_version 24 in any spelling", () => {
    for (const node_version of ["24", 24, "24.1"]) {
      const config = { graphs: { a: "./a.ts:g" }, node_version };
      expect(generateDockerfile(project({ config }), { baseImage: BASE })).toContain(`FROM ${BASE}`);
    }
  });
});

describe("bakeConfig", () => {
  it("makes module paths absolute, keeps other fields and drops an env file", () => {
    const baked = bakeConfig({
      graphs: { a: "./src/a.ts:graph", b: { path: "src/b.js", description: "B" }, c: "./c.ts" },
      env: ".env",
      auth: { path: "./src/auth.ts:auth" },
      http: { app: "./src/app.ts:app", cors: { allow_origins: ["*"] } },
      store: { index: { dims: 3 } },
    });
    expect(baked).toEqual({
      graphs: {
        a: "/deps/app/src/a.ts:graph",
        b: { path: "/deps/app/src/b.js", description: "B" },
        c: "/deps/app/c.ts",
      },
      auth: { path: "/deps/app/src/auth.ts:auth" },
      http: { app: "/deps/app/src/app.ts:app", cors: { allow_origins: ["*"] } },
      store: { index: { dims: 3 } },
    });
  });

  it("keeps an inline env mapping (committed, non-secret defaults)", () => {
    expect(bakeConfig({ graphs: { a: "./a.ts" }, env: { MODEL: "x" } }).env).toEqual({ MODEL: "x" });
  });
});

describe("generateDockerignore", () => {
  it("keeps node_modules, VCS data and env files out of the context, after the project's own rules", () => {
    expect(generateDockerignore()).toBe("node_modules\n.git\n.env\n.env.*\n!.env.example\n.langgraph_api\n*.log\n");
    const merged = generateDockerignore("coverage\nnode_modules\n");
    expect(merged.split("\n").slice(0, 3)).toEqual(["coverage", "node_modules", ".git"]);
    expect(merged.match(/^node_modules$/gm)).toHaveLength(1);
  });
});
