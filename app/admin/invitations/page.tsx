import { getFormatter, getTranslations } from "next-intl/server";
import { OpenInvitations } from "@/components/invitations/OpenInvitations";
import { invitationLinks, listInvitations } from "@/server/auth/invitations";
import { pageRole } from "@/server/compose/page";
import { publicUrl } from "@/server/config";
import { getServicesOrThrow } from "@/server/compose/services";
import { InvitationForm } from "./InvitationForm";

export const dynamic = "force-dynamic";

/** Admin: make invitation links, see the open ones (link, copy, revoke) and earlier ones. */
export default async function InvitationsPage() {
  await pageRole("/admin/invitations", "admin");
  const { db, secret, env } = getServicesOrThrow();
  const invitations = await listInvitations(db, invitationLinks(secret, publicUrl(env)));
  const t = await getTranslations("admin");
  const roles = await getTranslations("common.roles");
  const format = await getFormatter();
  const now = new Date();
  const when = (d: Date) => format.dateTime(d, "dateTime");
  return (
    <div className="min-h-0 flex-1 overflow-y-auto">
      <div className="mx-auto max-w-4xl px-6 py-8">
        <h1 className="text-2xl font-bold">{t("title")}</h1>
        <p className="mt-1 text-sm text-slate-600">{t("intro")}</p>
        <InvitationForm />
        <h2 className="mt-10 text-lg font-semibold">{t("openList")}</h2>
        <OpenInvitations
          rows={invitations
            .filter((i) => i.open)
            .map((i) => ({ id: i.id, email: i.email, roleLabel: roles(i.role), expires: when(i.expiresAt), url: i.url }))}
        />
        <h2 className="mt-10 text-lg font-semibold">{t("list")}</h2>
        {invitations.length === 0 ? (
          <p className="mt-2 text-sm text-slate-500">{t("empty")}</p>
        ) : (
          <table className="mt-2 w-full text-left text-sm" data-testid="invitations">
            <thead className="text-xs text-slate-500">
              <tr>
                <th className="py-1">{t("columns.email")}</th>
                <th>{t("columns.role")}</th>
                <th>{t("columns.expires")}</th>
                <th>{t("columns.status")}</th>
              </tr>
            </thead>
            <tbody>
              {invitations.map((i) => (
                <tr key={i.id} className="border-t border-slate-200">
                  <td className="py-1">{i.email}</td>
                  <td>{roles(i.role)}</td>
                  <td>{when(i.expiresAt)}</td>
                  <td>
                    {i.usedAt
                      ? t("status.used", { date: when(i.usedAt) })
                      : i.revokedAt
                        ? t("status.revoked", { date: when(i.revokedAt) })
                        : i.expiresAt <= now
                          ? t("status.expired")
                          : t("status.open")}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>
    </div>
  );
}
