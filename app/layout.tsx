import type { Metadata } from "next";
import Link from "next/link";
import type { ReactNode } from "react";
import "./globals.css";

export const metadata: Metadata = {
  title: "Labdeck",
  description: "CKA コースのハンズオンラボ",
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="ja">
      {/* The body is a full-height column: the lab view's terminals need a definite height to fit. */}
      <body className="flex h-full flex-col bg-slate-50 font-sans text-slate-900 antialiased">
        <header className="flex h-10 shrink-0 items-center border-b border-slate-200 bg-white px-4">
          <Link href="/" className="text-sm font-semibold tracking-wide text-slate-800 hover:text-sky-700">
            Labdeck
          </Link>
        </header>
        <main className="flex min-h-0 flex-1 flex-col">{children}</main>
      </body>
    </html>
  );
}
