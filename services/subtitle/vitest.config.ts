import { defineProject } from "vitest/config";

export default defineProject({
  test: {
    name: "@voiceloc/subtitle",
    testTimeout: 180_000,
    hookTimeout: 120_000,
  },
});
