import { defineProject } from "vitest/config";
import { sourceEnv, sourceResolution } from "../vitest.shared.ts";

export default defineProject({
  ...sourceResolution,
  test: {
    env: sourceEnv,
    name: "@voiceloc/deploy",
    include: ["src/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
