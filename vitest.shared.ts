/**
 * What every vitest project shares to run the TypeScript source with no build step. Workspace
 * packages export their compiled `dist/` by default and `src/index.ts` under the `@voiceloc/source`
 * condition (see AGENTS.md).
 */
export const SOURCE_CONDITION = "@voiceloc/source";

/**
 * Vite resolves the modules of node tests in its server environment: our condition beside vitest's
 * defaults for it ("node", "development|production"). Vitest hands the same conditions to its workers.
 */
export const sourceResolution = {
  ssr: { resolve: { conditions: [SOURCE_CONDITION, "node", "development|production"] } },
};

/**
 * Node processes a test spawns itself (`node --import tsx main.ts`) read the condition from
 * NODE_OPTIONS, which they inherit with the test's environment.
 */
export const sourceEnv = {
  NODE_OPTIONS: [process.env.NODE_OPTIONS, `--conditions=${SOURCE_CONDITION}`].filter(Boolean).join(" "),
};
