import { defineProject } from "vitest/config";
import { sourceEnv, sourceResolution } from "../../vitest.shared.ts";

export default defineProject({
  ...sourceResolution,
  test: {
    env: sourceEnv,
    name: "@voiceloc/engines",
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
