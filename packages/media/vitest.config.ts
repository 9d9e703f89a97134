import { defineProject } from "vitest/config";

export default defineProject({
  test: {
    name: "@voiceloc/media",
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
