import { getTranslations } from "next-intl/server";
import { redirect } from "next/navigation";
import { pageUserOrNull, safeNext } from "@/server/compose/page";
import { LoginForm } from "./LoginForm";

export const dynamic = "force-dynamic";

export default async function LoginPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const next = safeNext((await searchParams).next);
  if (await pageUserOrNull()) redirect(next);
  const t = await getTranslations("login");
  return (
    <div className="mx-auto mt-16 w-full max-w-sm px-6">
      <h1 className="text-2xl font-bold">{t("title")}</h1>
      <LoginForm next={next} />
      <p className="mt-6 text-xs text-slate-500">{t("noAccount")}</p>
    </div>
  );
}
