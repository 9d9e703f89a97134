import { existsSync, readdirSync } from "node:fs";
import { defineConfig } from "vitest/config";
import { sourceEnv, sourceResolution } from "./vitest.shared.ts";

// Every package and service is a vitest project. Those with a vitest.config.ts of their own
// use it (and take the source resolution from vitest.shared.ts too); the others get these
// defaults (a loaded 2-core machine needs generous timeouts).
const dirs = ["packages", "services"].flatMap((group) =>
  readdirSync(group, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `${group}/${entry.name}`),
).concat("deploy");

export default defineConfig({
  ...sourceResolution,
  test: {
    projects: dirs.map((dir) =>
      existsSync(`${dir}/vitest.config.ts`)
        ? dir
        : {
            extends: true,
            test: { name: dir.split("/")[1], dir, include: ["**/*.test.ts"] },
          },
    ),
    env: sourceEnv,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
