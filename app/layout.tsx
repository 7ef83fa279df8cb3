import type { Metadata } from "next";
import Link from "next/link";
import { NextIntlClientProvider } from "next-intl";
import { getLocale, getTimeZone, getTranslations } from "next-intl/server";
import type { ReactNode } from "react";
import { LanguageSwitcher } from "@/components/account/LanguageSwitcher";
import { SignOutButton } from "@/components/account/SignOutButton";
import { pageUserOrNull } from "@/server/compose/page";
import { timeZoneAbbreviation } from "@/server/i18n/time-zone";
import "./globals.css";

export async function generateMetadata(): Promise<Metadata> {
  const t = await getTranslations("common");
  return { title: t("appName"), description: t("description") };
}

export default async function RootLayout({ children }: { children: ReactNode }) {
  const locale = await getLocale();
  const t = await getTranslations("common");
  const nav = await getTranslations("nav");
  const user = await pageUserOrNull();
  const timeZone = await getTimeZone();
  return (
    <html lang={locale}>
      {/* The body is a full-height column: the lab view's terminals need a definite height to fit. */}
      <body className="flex h-full flex-col bg-slate-50 font-sans text-slate-900 antialiased">
        <NextIntlClientProvider>
          <header className="flex h-10 shrink-0 items-center gap-4 border-b border-slate-200 bg-white px-4">
            <Link href="/" className="text-sm font-semibold tracking-wide text-slate-800 hover:text-sky-700">
              {t("appName")}
            </Link>
            {/* Every time on every page is in the platform zone (LABDECK_TIME_ZONE), whatever the browser's. */}
            <span className="text-xs text-slate-500" data-testid="time-zone-note" data-time-zone={timeZone}>
              {t("timeZoneNote", { zone: timeZone, abbr: timeZoneAbbreviation(timeZone, locale) })}
            </span>
            <div className="ml-auto flex items-center gap-4">
              {user?.role === "admin" && (
                <Link href="/admin/invitations" className="text-xs text-slate-600 hover:text-sky-700">
                  {t("admin")}
                </Link>
              )}
              {(user?.role === "admin" || user?.role === "instructor") && (
                <Link
                  href={user.role === "admin" ? "/admin/cohorts" : "/cohorts"}
                  className="text-xs text-slate-600 hover:text-sky-700"
                  data-testid="nav-cohorts"
                >
                  {nav("cohorts")}
                </Link>
              )}
              {user?.role === "admin" && (
                <Link href="/admin/capacity" className="text-xs text-slate-600 hover:text-sky-700">
                  {nav("capacity")}
                </Link>
              )}
              {user && (
                <span className="text-xs text-slate-600" data-testid="signed-in-user" data-role={user.role}>
                  {user.name} ({t(`roles.${user.role}`)})
                </span>
              )}
              <LanguageSwitcher />
              {user && <SignOutButton />}
            </div>
          </header>
          <main className="flex min-h-0 flex-1 flex-col">{children}</main>
        </NextIntlClientProvider>
      </body>
    </html>
  );
}
