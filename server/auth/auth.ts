/**
 * Identity: better-auth over our Prisma/PostgreSQL database. Email + password only; public
 * sign-up is off (accounts come from the first-start bootstrap and from invitations, both through
 * `users.ts`). A sign-in is what better-auth calls a session: a signed, httpOnly cookie naming a
 * row of its `Session` table.
 * Telemetry is off (the platform runs without internet).
 */
import { createHmac } from "node:crypto";
import { betterAuth } from "better-auth";
import { CLIENT_ADDRESS_HEADER } from "../throttle";
import { prismaAdapter } from "better-auth/adapters/prisma";
import type { Db } from "../db/client";

/** How long a sign-in lasts without activity, in seconds (a course day plus a week of slack). */
export const SIGN_IN_EXPIRES_S = 8 * 24 * 60 * 60;
/** A sign-in used this long after its last refresh gets its expiry pushed out again, in seconds. */
const SIGN_IN_UPDATE_AGE_S = 24 * 60 * 60;
/** Minimum password length; better-auth enforces it on sign-in forms and password changes. */
export const MIN_PASSWORD_LENGTH = 10;
/** Cookie names start with this (`labdeck.session_token`). */
export const AUTH_COOKIE_PREFIX = "labdeck";

export const ROLES = ["learner", "instructor", "admin"] as const;
export type Role = (typeof ROLES)[number];

export interface AuthOptions {
  db: Db;
  /** The platform secret (server/secret.ts); better-auth's key is derived from it. */
  platformSecret: Buffer;
  /** Public base URL, e.g. http://127.0.0.1:3000 (cookies, redirects and the trusted origin). */
  baseURL: string;
  /**
   * A sign-in ended (sign-out, or its Session row revoked or expired and deleted): the composition
   * root (server/compose/compose.ts) publishes an access notice so every process closes that
   * user's sockets and streams that relied on it.
   */
  onSignInEnded?: (userId: string) => Promise<void> | void;
}

/** better-auth's signing key: its own key derived from the platform secret, never the secret itself. */
export function deriveAuthSecret(platformSecret: Buffer): string {
  return createHmac("sha256", platformSecret).update("labdeck/better-auth/v1").digest("hex");
}

export function createAuth(options: AuthOptions) {
  return betterAuth({
    appName: "Labdeck",
    baseURL: options.baseURL,
    basePath: "/api/auth",
    secret: deriveAuthSecret(options.platformSecret),
    database: prismaAdapter(options.db, { provider: "postgresql" }),
    telemetry: { enabled: false },
    emailAndPassword: {
      enabled: true,
      disableSignUp: true,
      minPasswordLength: MIN_PASSWORD_LENGTH,
    },
    user: {
      additionalFields: {
        // input: false — no sign-up or update-user request can set it; only our domain functions do.
        role: { type: ["learner", "instructor", "admin"], required: false, input: false, defaultValue: "learner" },
      },
    },
    session: { expiresIn: SIGN_IN_EXPIRES_S, updateAge: SIGN_IN_UPDATE_AGE_S },
    // Every deletion of a Session row goes through better-auth's hooked delete (sign-out,
    // revoke-session(s), an expired row found on read), so live sockets follow each one.
    databaseHooks: {
      session: {
        delete: {
          after: async (signIn) => {
            await options.onSignInEnded?.(signIn.userId);
          },
        },
      },
    },
    // The client address server.ts computed (X-Forwarded-For only from LABDECK_TRUSTED_PROXIES),
    // never a header the client chose.
    advanced: { cookiePrefix: AUTH_COOKIE_PREFIX, ipAddress: { ipAddressHeaders: [CLIENT_ADDRESS_HEADER] } },
    // Sign-in has Labdeck's failure limits, shared by every process (sign-in-limits.ts). better-auth's
    // own (production only: 3 a 10 s per address, per process) would hold back a class behind one NAT.
    rateLimit: { customRules: { "/sign-in/email": false } },
    // better-auth's own paths that make accounts or change identity outside our invitation flow.
    disabledPaths: ["/sign-up/email", "/update-user", "/change-email", "/delete-user"],
  });
}

export type Auth = ReturnType<typeof createAuth>;
