import pino from "pino";
import { logLevelFromEnv } from "./config";

/**
 * The process logger. Secrets never reach it: tokens, private keys and passwords are redacted by
 * path wherever they might be passed in an object.
 */
export const log = pino({
  level: logLevelFromEnv(),
  redact: {
    paths: ["token", "*.token", "privateKey", "*.privateKey", "password", "*.password", "databaseUrl"],
    censor: "[redacted]",
  },
});
