import { getTranslations } from "next-intl/server";
import { MIN_PASSWORD_LENGTH } from "@/server/auth/auth";
import { findOpenInvitation } from "@/server/auth/invitations";
import { getServicesOrThrow } from "@/server/services";
import { AcceptForm } from "./AcceptForm";

export const dynamic = "force-dynamic";

/** An invitation link: name + password make the account (public page; the token is the key). */
export default async function InvitePage({ params }: { params: Promise<{ token: string }> }) {
  const { token } = await params;
  const invitation = await findOpenInvitation(getServicesOrThrow().db, token);
  const t = await getTranslations("invite");
  const roles = await getTranslations("common.roles");
  return (
    <div className="mx-auto mt-16 w-full max-w-sm px-6">
      <h1 className="text-2xl font-bold">{t("title")}</h1>
      {invitation ? (
        <>
          <p className="mt-2 text-sm text-slate-600">{t("intro", { email: invitation.email, role: roles(invitation.role) })}</p>
          <AcceptForm token={token} minPassword={MIN_PASSWORD_LENGTH} />
        </>
      ) : (
        <p role="alert" data-testid="invitation-invalid" className="mt-4 text-sm text-red-700">
          {t("invalid")}
        </p>
      )}
    </div>
  );
}
