/**
 * Security headers. Pages get a Content-Security-Policy with a fresh nonce per request (proxy.ts
 * sets it on the request, so Next.js puts the nonce on its own inline scripts, and on the
 * response); every response gets nosniff, a referrer policy and no framing (next.config.ts).
 */

/** The page CSP: scripts only from this origin or carrying the nonce; no framing, plugins or foreign forms. */
export function pageContentSecurityPolicy(nonce: string, dev: boolean, options: { wasm?: boolean } = {}): string {
  return [
    "default-src 'self'",
    // `wasm`: the replay page's asciinema-player runs its terminal emulator as WebAssembly;
    // 'wasm-unsafe-eval' lets it compile that module and allows no JavaScript eval.
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${options.wasm ? " 'wasm-unsafe-eval'" : ""}${dev ? " 'unsafe-eval'" : ""}`,
    // xterm.js and React set inline styles on elements.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    // Same-origin fetches, event streams and the terminal WebSocket.
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "object-src 'none'",
  ].join("; ");
}

/** API responses are data, never documents: nothing may run or frame them. */
export const API_CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'";

/** On every response (next.config.ts headers()). */
export const COMMON_SECURITY_HEADERS: { key: string; value: string }[] = [
  { key: "X-Content-Type-Options", value: "nosniff" },
  { key: "Referrer-Policy", value: "same-origin" },
  { key: "X-Frame-Options", value: "DENY" },
  { key: "Cross-Origin-Opener-Policy", value: "same-origin" },
];
