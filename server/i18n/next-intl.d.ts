/** Type-checks the named date formats: format.dateTime(d, "dateTime") must name one of DATE_TIME_FORMATS. */
import type { DATE_TIME_FORMATS } from "./time-zone";

declare module "next-intl" {
  interface AppConfig {
    Formats: typeof DATE_TIME_FORMATS;
  }
}
