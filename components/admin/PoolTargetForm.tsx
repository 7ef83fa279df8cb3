"use client";
/**
 * A lab's prepared warm sets and cap, as an admin edits them on /admin/capacity: PUT
 * /api/pool-targets/:slug, or DELETE to remove them. The page is refreshed after a save.
 */
import { useTranslations } from "next-intl";
import { useRouter } from "next/navigation";
import { useState, type FormEvent } from "react";

export function PoolTargetForm(props: { slug: string; target: { reserve: number; initial: number; cap: number | null } | null }) {
  const t = useTranslations("capacity");
  const router = useRouter();
  const [reserve, setReserve] = useState(String(props.target?.reserve ?? 0));
  const [initial, setInitial] = useState(String(props.target?.initial ?? 0));
  const [cap, setCap] = useState(props.target?.cap == null ? "" : String(props.target.cap));
  const [status, setStatus] = useState<{ ok: boolean; text: string } | null>(null);
  const url = `/api/pool-targets/${encodeURIComponent(props.slug)}`;

  async function save(event: FormEvent) {
    event.preventDefault();
    const body = { reserve: Number(reserve), initial: Number(initial), cap: cap.trim() === "" ? null : Number(cap) };
    const res = await fetch(url, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    setStatus(res.ok ? { ok: true, text: t("saved") } : { ok: false, text: t("saveFailed", { status: res.status }) });
    if (res.ok) router.refresh();
  }

  async function remove() {
    const res = await fetch(url, { method: "DELETE" });
    setStatus(res.ok ? { ok: true, text: t("saved") } : { ok: false, text: t("saveFailed", { status: res.status }) });
    if (res.ok) router.refresh();
  }

  const input = "w-14 rounded border border-slate-300 px-1 py-0.5 text-right text-sm";
  return (
    <form onSubmit={(e) => void save(e)} className="flex flex-wrap items-center gap-2 text-xs" data-testid={`pool-target-${props.slug}`}>
      <label className="flex items-center gap-1">
        {t("reserve")}
        <input
          type="number"
          min={0}
          max={50}
          value={reserve}
          onChange={(e) => setReserve(e.target.value)}
          className={input}
          name="reserve"
        />
      </label>
      <label className="flex items-center gap-1">
        {t("initial")}
        <input
          type="number"
          min={0}
          max={200}
          value={initial}
          onChange={(e) => setInitial(e.target.value)}
          className={input}
          name="initial"
        />
      </label>
      <label className="flex items-center gap-1">
        {t("cap")}
        <input
          type="number"
          min={1}
          max={10000}
          value={cap}
          placeholder={t("noCap")}
          onChange={(e) => setCap(e.target.value)}
          className={`${input} w-20`}
          name="cap"
        />
      </label>
      <button type="submit" className="rounded bg-sky-700 px-2 py-1 text-white hover:bg-sky-800">
        {t("save")}
      </button>
      {props.target && (
        <button type="button" onClick={() => void remove()} className="rounded px-2 py-1 text-slate-600 hover:bg-slate-100">
          {t("remove")}
        </button>
      )}
      {status && <span className={status.ok ? "text-emerald-700" : "text-red-700"}>{status.text}</span>}
    </form>
  );
}
