// Lints the TypeScript that runs on Node (control plane, tests, host). The AssemblyScript filter
// is checked by its own compiler (asc), whose decorators and types ESLint's parser does not know.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", "build/", "control-plane/dist/", "filter/", "test/bench/noop-filter/", "test/bench/redaction-module/", ".tmp/", "test-results/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { console: "readonly", process: "readonly", Buffer: "readonly", URL: "readonly", setTimeout: "readonly", clearTimeout: "readonly", setInterval: "readonly", clearInterval: "readonly", setImmediate: "readonly", TextEncoder: "readonly", TextDecoder: "readonly", WebAssembly: "readonly", AbortController: "readonly", fetch: "readonly", performance: "readonly", queueMicrotask: "readonly", structuredClone: "readonly" } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "eqeqeq": ["error", "always"],
      "no-console": "off",
    },
  },
);
