/**
 * The server's rooms and the one direction of their arrows (ARCHITECTURE.md, "Rooms"). A room
 * may import rooms below it, never one above; no file or folder cycles; production code never
 * imports test equipment. `npm run lint:deps` (part of `npm run test:fast`) fails on any breach.
 */
/** Lowest first. A room is a list of path patterns. */
const ROOMS = [
  [
    "base",
    [
      "^server/(config|log|secret|signed|startup-failure|audit|denied|throttle)[.]ts$",
      "^server/(db|i18n|events|leases)/",
      "^server/ops/metrics[.]ts$",
    ],
  ],
  ["ssh", ["^server/ssh/"]],
  ["holder", ["^server/holder/"]],
  ["machines", ["^server/machines/"]],
  ["labs", ["^server/labs/"]],
  ["terminal", ["^server/terminal/"]],
  ["grader", ["^server/grader/"]],
  ["sessions", ["^server/sessions/"]],
  ["auth", ["^server/auth/"]],
  ["http", ["^server/http/", "^server/ops/http[.]ts$"]],
  ["features", ["^server/(cohorts|exams|preview|recordings)/"]],
  ["compose", ["^server/(compose|cli)/", "^server/services[.]ts$", "^server[.]ts$"]],
  ["components", ["^components/"]],
  ["app", ["^app/", "^proxy[.]ts$", "^i18n/"]],
];

const TESTS = "[.]test[.]tsx?$";
const union = (patterns) => patterns.join("|");

const layering = ROOMS.slice(0, -1).map(([name, paths], i) => ({
  name: `no-arrow-up-from-${name}`,
  comment: `${name} may import only rooms below it: ${
    ROOMS.slice(0, i)
      .map(([n]) => n)
      .join(", ") || "(none)"
  }`,
  severity: "error",
  from: { path: union(paths), pathNot: TESTS },
  to: { path: union(ROOMS.slice(i + 1).flatMap(([, p]) => p)) },
}));

module.exports = {
  forbidden: [
    ...layering,
    {
      name: "no-cycles",
      comment: "No file imports itself through others (type-only imports count too).",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "lesson-below-lab",
      comment: "The lesson renders Markdown and asks the page for machines through its own context; the lab workspace provides it.",
      severity: "error",
      from: { path: "^components/(lesson|terminal|recordings|account)/" },
      to: { path: "^components/lab/" },
    },
    {
      name: "no-test-equipment-in-production",
      comment: "server/testing/ is test equipment: only tests, benchmarks, e2e and the CLI's test commands use it.",
      severity: "error",
      from: { path: "^(server|app|components)/", pathNot: `${TESTS}|^server/testing/|^server/cli/` },
      to: { path: "^server/testing/" },
    },
    {
      name: "providers-apart",
      comment: "QEMU and KubeVirt share what is theirs through machines/ and machines/images/, never each other.",
      severity: "error",
      from: { path: "^server/machines/(qemu|kubevirt)/" },
      to: { path: "^server/machines/(qemu|kubevirt)/", pathNot: "^server/machines/$1/" },
    },
    {
      name: "images-are-data",
      comment: "Image variants and guest files are data that both providers read; they import no provider.",
      severity: "error",
      from: { path: "^server/machines/images/" },
      to: { path: "^server/machines/(qemu|kubevirt)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Tests are leaves (nothing imports one), so they close no cycle.
    exclude: { path: "^(node_modules|[.]next|server/db/generated)/|[.]test[.]tsx?$" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default"] },
  },
};
