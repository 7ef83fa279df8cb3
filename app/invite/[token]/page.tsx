import Link from "next/link";
import { getTranslations } from "next-intl/server";
import { SignOutButton } from "@/components/account/SignOutButton";
import { MIN_PASSWORD_LENGTH } from "@/server/auth/auth";
import { findOpenInvitation } from "@/server/auth/invitations";
import { pageUserOrNull } from "@/server/compose/page";
import { getServicesOrThrow } from "@/server/compose/services";
import { AcceptForm } from "./AcceptForm";
import { JoinButton } from "./JoinButton";

export const dynamic = "force-dynamic";

/**
 * An invitation link (public page; the token is the key). A new email: name + password make the
 * account. An email that already has an account: sign in as it (back here afterwards), then
 * join the invitation's cohort; signed in as someone else, the page says so and offers to sign out.
 */
export default async function InvitePage({ params }: { params: Promise<{ token: string }> }) {
  const { token } = await params;
  const { db } = getServicesOrThrow();
  const invitation = await findOpenInvitation(db, token);
  const t = await getTranslations("invite");
  const roles = await getTranslations("common.roles");
  if (!invitation) {
    return (
      <Shell title={t("title")}>
        <p role="alert" data-testid="invitation-invalid" className="mt-4 text-sm text-red-700">
          {t("invalid")}
        </p>
      </Shell>
    );
  }
  const account = await db.user.findUnique({ where: { email: invitation.email }, select: { id: true } });
  if (!account) {
    return (
      <Shell title={t("title")}>
        <p className="mt-2 text-sm text-slate-600">{t("intro", { email: invitation.email, role: roles(invitation.role) })}</p>
        <AcceptForm token={token} minPassword={MIN_PASSWORD_LENGTH} />
      </Shell>
    );
  }
  const user = await pageUserOrNull();
  const cohort = invitation.cohortId ? await db.cohort.findUnique({ where: { id: invitation.cohortId }, select: { name: true } }) : null;
  const here = `/invite/${token}`;
  return (
    <Shell title={t("joinTitle")}>
      <div data-testid="invitation-existing" className="mt-2 space-y-4 text-sm text-slate-700">
        {!cohort ? (
          <p>{t("existingNoCohort", { email: invitation.email })}</p>
        ) : (
          <p>{t("existingIntro", { email: invitation.email, cohort: cohort.name, role: roles(invitation.role) })}</p>
        )}
        {!user ? (
          <Link
            href={`/login?next=${encodeURIComponent(here)}`}
            className="inline-block rounded bg-sky-600 px-4 py-2 font-semibold text-white hover:bg-sky-700"
          >
            {t("signInToJoin")}
          </Link>
        ) : user.id !== account.id ? (
          <div role="alert" data-testid="invitation-other-account" className="space-y-2 text-red-700">
            <p>{t("otherAccount", { email: invitation.email, current: user.email })}</p>
            <SignOutButton />
          </div>
        ) : cohort ? (
          <JoinButton token={token} />
        ) : (
          <Link href="/" className="text-sky-700 hover:underline">
            {t("home")}
          </Link>
        )}
      </div>
    </Shell>
  );
}

function Shell({ title, children }: { title: string; children: React.ReactNode }) {
  return (
    <div className="mx-auto mt-16 w-full max-w-sm px-6">
      <h1 className="text-2xl font-bold">{title}</h1>
      {children}
    </div>
  );
}
