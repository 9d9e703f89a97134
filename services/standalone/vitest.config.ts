import { defineProject } from "vitest/config";
import { sourceEnv, sourceResolution } from "../../vitest.shared.ts";

export default defineProject({
  ...sourceResolution,
  test: {
    env: sourceEnv,
    name: "@voiceloc/standalone",
    testTimeout: 180_000,
    hookTimeout: 120_000,
    // Every response of the service under test is checked against the OpenAPI document it serves.
    setupFiles: ["./src/testing/contract-setup.ts"],
  },
});
