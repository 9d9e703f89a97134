import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["**/node_modules/**", "**/dist/**", "**/.turbo/**"] },
  ...tseslint.configs.recommended,
  {
    rules: {
      "no-console": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-explicit-any": "error",
    },
  },
  {
    // What the build ships (src/ without tests and test helpers) never imports test code: tsc would
    // compile an imported helper into dist/ although it is excluded, and vitest is not installed there.
    files: ["**/src/**/*.ts"],
    ignores: ["**/*.test.ts", "**/testing/**", "**/src/**/test-*", "packages/testing/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [
            { name: "vitest", message: "Test code only: production src/ must not import vitest." },
          ],
          patterns: [
            {
              regex: "(^|/)(testing|test-[^/]*|[^/]*\\.test\\.ts)(/|$)",
              message: "Test code only: the production build excludes src/**/testing, test-* and *.test.ts.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["**/*.test.ts", "**/testing/**/*.ts", "**/bench/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
);
