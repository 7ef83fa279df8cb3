// ESLint (flat config): typescript-eslint's recommended rules without type information (fast:
// the typecheck is tsc's job), React's rules of hooks, and the house rules of ARCHITECTURE.md.
import js from "@eslint/js";
import globals from "globals";
import reactHooks from "eslint-plugin-react-hooks";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: ["node_modules/", ".next/", "dist/", ".labdeck/", "server/db/generated/", "next-env.d.ts", ".test-reports/", "test-results/"],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    plugins: { "react-hooks": reactHooks },
    rules: {
      // The classic rules of hooks; the React Compiler's stricter rules are not adopted (no compiler here).
      "react-hooks/rules-of-hooks": "error",
      "react-hooks/exhaustive-deps": "error",
      // Control characters in patterns are deliberate here: input and terminal text are cleaned of them.
      "no-control-regex": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
    },
  },
  {
    // Playwright's fixtures call their continuation `use`, which is not React's.
    files: ["e2e/**/*.ts"],
    rules: { "react-hooks/rules-of-hooks": "off" },
  },
  {
    // Tests and test equipment read untyped JSON (Kubernetes objects, reports) as it comes.
    files: ["**/*.test.ts", "server/testing/**"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
  {
    // Production code: no function longer than a screenful or two (tests and benchmarks may be).
    files: ["server/**/*.ts", "app/**/*.{ts,tsx}", "components/**/*.{ts,tsx}", "*.ts"],
    ignores: ["**/*.test.ts", "**/*.test.tsx", "server/testing/**"],
    rules: { "max-lines-per-function": ["error", { max: 100 }] },
  },
);
