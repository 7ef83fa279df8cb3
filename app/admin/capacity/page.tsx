import Link from "next/link";
import { getFormatter, getTranslations } from "next-intl/server";
import { pageRole } from "@/server/compose/page";
import { capacitySnapshot, type Capacity } from "@/server/cohorts/capacity";
import { getServicesOrThrow } from "@/server/compose/services";
import { PoolTargetForm } from "@/components/admin/PoolTargetForm";

export const dynamic = "force-dynamic";

const GIB = 1024 ** 3;

/** Admin: how full the platform is — live sessions, machines, the provider's warm pool, host memory. */
export default async function CapacityPage() {
  await pageRole("/admin/capacity", "admin");
  const { db, provider } = getServicesOrThrow();
  const c = await capacitySnapshot(db, provider, { labsDir: getServicesOrThrow().labs.labsDir });
  const t = await getTranslations("capacity");
  const format = await getFormatter();
  return (
    <div className="min-h-0 flex-1 overflow-y-auto">
      <div className="mx-auto max-w-4xl px-6 py-8" data-testid="capacity">
        <div className="flex items-center gap-4">
          <h1 className="text-2xl font-bold">{t("title")}</h1>
          <span className="text-xs text-slate-500">{t("at", { date: format.dateTime(c.at, "timeSeconds") })}</span>
          <Link href="/admin/capacity" className="ml-auto text-sm text-sky-700 hover:underline">
            {t("refresh")}
          </Link>
        </div>
        <SummaryCards c={c} t={t} format={format} />
        <h2 className="mt-8 text-lg font-semibold">{t("labs")}</h2>
        <p className="mt-1 text-xs text-slate-500">{t("targetHelp")}</p>
        <LabsTable labs={c.labs} t={t} />
      </div>
    </div>
  );
}

type CapacityTranslator = Awaited<ReturnType<typeof getTranslations<"capacity">>>;

/** Sessions by state, machines, host memory and the warm pool, one card each. */
function SummaryCards({ c, t, format }: { c: Capacity; t: CapacityTranslator; format: Awaited<ReturnType<typeof getFormatter>> }) {
  const gib = (n: number) => format.number(n / GIB, { maximumFractionDigits: 1 });
  const usedPct = c.memory ? Math.round((100 * (c.memory.totalBytes - c.memory.availableBytes)) / c.memory.totalBytes) : 0;
  const card = "rounded-lg border border-slate-200 bg-white p-4";
  return (
    <div className="mt-6 grid gap-4 sm:grid-cols-2">
      <div className={card}>
        <h2 className="text-sm text-slate-500">{t("sessions")}</h2>
        <dl className="mt-2 flex gap-6">
          {(["starting", "ready", "suspended", "ending"] as const).map((s) => (
            <div key={s}>
              <dt className="text-xs text-slate-500">{t(`state.${s}`)}</dt>
              <dd className="text-2xl font-bold" data-testid={`sessions-${s}`}>
                {c.sessions[s]}
              </dd>
            </div>
          ))}
        </dl>
      </div>
      <div className={card}>
        <h2 className="text-sm text-slate-500">{t("machines")}</h2>
        <p className="mt-2 text-2xl font-bold" data-testid="machines">
          {c.machines}
        </p>
        <p className="text-xs text-slate-500">
          {t("provider")}: <span className="font-mono">{c.provider}</span>
        </p>
      </div>
      <div className={card}>
        <h2 className="text-sm text-slate-500">{t("memory")}</h2>
        {c.memory && (
          <>
            <p className="mt-2 text-lg font-semibold">
              {t("memoryValue", { available: gib(c.memory.availableBytes), total: gib(c.memory.totalBytes) })}
            </p>
            <div className="mt-2 h-2 overflow-hidden rounded bg-slate-200">
              <div className={`h-full ${usedPct > 85 ? "bg-red-500" : "bg-sky-500"}`} style={{ width: `${usedPct}%` }} />
            </div>
          </>
        )}
      </div>
      <div className={card}>
        <h2 className="text-sm text-slate-500">{t("pool")}</h2>
        <p className="mt-2 text-lg font-semibold" data-testid="pool">
          {c.pool
            ? `${t("poolValue", { ready: c.pool.ready, size: c.pool.size })}${c.pool.filling ? ` · ${t("poolFilling")}` : ""}`
            : t("noPool")}
        </p>
        {c.pool?.lastError && <p className="mt-1 text-xs text-red-700">{c.pool.lastError}</p>}
      </div>
    </div>
  );
}

/** Per lab: what one VM and one session take, how many more fit, live and queued sessions, and the prepared pool with its target. */
function LabsTable({ labs, t }: { labs: Capacity["labs"]; t: CapacityTranslator }) {
  return (
    <table className="mt-3 w-full border-collapse text-sm" data-testid="lab-capacity">
      <thead>
        <tr className="border-b border-slate-200 text-left text-xs text-slate-500">
          <th className="py-1 pr-3">{t("lab")}</th>
          <th className="py-1 pr-3">{t("perVm")}</th>
          <th className="py-1 pr-3">{t("perSession")}</th>
          <th className="py-1 pr-3">{t("fit")}</th>
          <th className="py-1 pr-3">{t("live")}</th>
          <th className="py-1 pr-3">{t("queued")}</th>
          <th className="py-1 pr-3">{t("prepared")}</th>
        </tr>
      </thead>
      <tbody>
        {labs.map((lab) => (
          <tr key={lab.slug} className="border-b border-slate-100 align-top" data-lab={lab.slug}>
            <td className="py-2 pr-3">
              <div className="font-medium">{lab.title}</div>
              <div className="font-mono text-xs text-slate-500">
                {lab.slug} · {lab.image}
              </div>
            </td>
            <td className="py-2 pr-3 text-xs">{t("perVmValue", { vcpus: lab.vcpus, memory: lab.memoryMiB })}</td>
            <td className="py-2 pr-3 text-xs">{t("perSessionValue", { memory: lab.sessionMiB, machines: lab.machines })}</td>
            <td className="py-2 pr-3 font-semibold" data-testid="fit">
              {lab.fit ?? "–"}
            </td>
            <td className="py-2 pr-3" data-testid="live">
              {lab.live}
            </td>
            <td className="py-2 pr-3" data-testid="queued">
              {lab.queued}
            </td>
            <td className="py-2 pr-3">
              {lab.ready !== null && <div className="text-xs text-slate-600">{t("preparedValue", { ready: lab.ready })}</div>}
              <PoolTargetForm slug={lab.slug} target={lab.target} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
