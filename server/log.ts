import pino from "pino";

/**
 * The process logger. Secrets never reach it: tokens, private keys and passwords are redacted by
 * path wherever they might be passed in an object.
 */
export const log = pino({
  level: process.env.LOG_LEVEL ?? "info",
  redact: {
    paths: ["token", "*.token", "privateKey", "*.privateKey", "password", "*.password", "databaseUrl"],
    censor: "[redacted]",
  },
});
