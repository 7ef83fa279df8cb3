"use client";
/** Create (POST /api/cohorts) or edit (PUT /api/cohorts/:id) a cohort: name, dates, labs, limits. */
import { useLocale, useTimeZone, useTranslations } from "next-intl";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { callApi } from "@/components/cohorts/api";
import { DEFAULT_TIME_ZONE, timeZoneAbbreviation, utcToZonedInput, zonedInputToUtc } from "@/server/i18n/time-zone";

export interface CohortFormValues {
  id?: string;
  name: string;
  startsAt: string | null;
  endsAt: string | null;
  labs: string[];
  sessionMinutes: number | null;
  idleMinutes: number | null;
  examAttempts?: number;
  examMinutes?: number | null;
}

export function CohortForm(props: { initial?: CohortFormValues; catalog: { slug: string; title: string }[]; disabled?: boolean }) {
  const t = useTranslations("cohorts");
  const { initial, catalog } = props;
  // The platform zone (i18n/request.ts), not the browser's: 09:00 entered is 09:00 there.
  const timeZone = useTimeZone() ?? DEFAULT_TIME_ZONE; // always set by i18n/request.ts
  const locale = useLocale();
  const zoneNote = t("dateInZone", { zone: timeZone, abbr: timeZoneAbbreviation(timeZone, locale) });
  const toInput = (iso: string | null) => (iso ? utcToZonedInput(iso, timeZone) : "");
  const { busy, message, submit } = useCohortSave(initial?.id, timeZone);
  return (
    <form
      data-testid="cohort-form"
      className="mt-4 grid gap-3 rounded-lg border border-slate-200 bg-white p-4 sm:grid-cols-2"
      onSubmit={async (e) => {
        e.preventDefault();
        await submit(new FormData(e.currentTarget));
      }}
    >
      <label className="text-sm sm:col-span-2">
        {t("name")}
        <input
          name="name"
          required
          maxLength={100}
          defaultValue={initial?.name}
          className="mt-1 block w-full rounded border border-slate-300 px-2 py-1.5"
        />
      </label>
      <DateField name="startsAt" label={t("startsAt")} zoneNote={zoneNote} defaultValue={toInput(initial?.startsAt ?? null)} />
      <DateField name="endsAt" label={t("endsAt")} zoneNote={zoneNote} defaultValue={toInput(initial?.endsAt ?? null)} />
      <MinutesField name="sessionMinutes" label={t("sessionMinutes")} defaultValue={initial?.sessionMinutes ?? null} />
      <MinutesField name="idleMinutes" label={t("idleMinutes")} defaultValue={initial?.idleMinutes ?? null} />
      <label className="text-sm">
        {t("examAttempts")}
        <input
          name="examAttempts"
          type="number"
          min={1}
          max={10}
          defaultValue={initial?.examAttempts ?? 1}
          className="mt-1 block w-full rounded border border-slate-300 px-2 py-1.5"
        />
      </label>
      <MinutesField name="examMinutes" label={t("examMinutes")} defaultValue={initial?.examMinutes ?? null} />
      {initial?.id && (
        <p className="text-xs text-slate-600 sm:col-span-2" data-testid="limits-note">
          {t("limitsApplyToRunning")}
        </p>
      )}
      <fieldset className="text-sm sm:col-span-2">
        <legend>{t("labs")}</legend>
        <div className="mt-1 flex flex-wrap gap-3">
          {catalog.map((lab) => (
            <label key={lab.slug} className="flex items-center gap-1.5 rounded border border-slate-200 px-2 py-1">
              <input type="checkbox" name="labs" value={lab.slug} defaultChecked={initial?.labs.includes(lab.slug)} data-lab={lab.slug} />
              {lab.title}
            </label>
          ))}
        </div>
      </fieldset>
      <div className="flex items-center gap-3 sm:col-span-2">
        <button
          type="submit"
          disabled={busy || props.disabled}
          className="rounded bg-sky-600 px-4 py-2 text-sm font-semibold text-white hover:bg-sky-700 disabled:opacity-60"
        >
          {busy ? (initial?.id ? t("saving") : t("creating")) : initial?.id ? t("save") : t("create")}
        </button>
        {message && (
          <p role={message.ok ? "status" : "alert"} className={`text-sm ${message.ok ? "text-emerald-700" : "text-red-700"}`}>
            {message.text}
          </p>
        )}
      </div>
    </form>
  );
}

/**
 * Sends the form: an edit (`id`) saves in place and refreshes the page; a new cohort opens its
 * own page. Dates are read in the platform zone `timeZone` and sent as UTC.
 */
function useCohortSave(id: string | undefined, timeZone: string) {
  const t = useTranslations("cohorts");
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);

  async function submit(form: FormData) {
    const when = (key: string) => {
      const v = String(form.get(key) ?? "");
      return v ? (zonedInputToUtc(v, timeZone)?.toISOString() ?? v) : null; // an unreadable value goes as is, for the API's 400
    };
    const body = {
      name: form.get("name"),
      startsAt: when("startsAt"),
      endsAt: when("endsAt"),
      labs: form.getAll("labs"),
      sessionMinutes: form.get("sessionMinutes") || null,
      idleMinutes: form.get("idleMinutes") || null,
      examAttempts: form.get("examAttempts") || undefined,
      examMinutes: form.get("examMinutes") || null,
    };
    setBusy(true);
    setMessage(null);
    const res = id
      ? await callApi<{ cohort: { id: string } }>(`/api/cohorts/${id}`, { method: "PUT", json: body })
      : await callApi<{ cohort: { id: string } }>("/api/cohorts", { method: "POST", json: body });
    setBusy(false);
    if (!res.ok || !res.body) return setMessage({ ok: false, text: res.error ?? t("failed") });
    if (id) {
      setMessage({ ok: true, text: t("saved") });
      router.refresh();
    } else router.push(`/admin/cohorts/${res.body.cohort.id}`);
  }

  return { busy, message, submit };
}

/** A date and time in the platform zone, which the note beside the label names. */
function DateField({ name, label, zoneNote, defaultValue }: { name: string; label: string; zoneNote: string; defaultValue: string }) {
  return (
    <label className="text-sm">
      {label}{" "}
      <span className="text-xs text-slate-500" data-testid="date-zone-note">
        {zoneNote}
      </span>
      <input
        name={name}
        type="datetime-local"
        defaultValue={defaultValue}
        className="mt-1 block w-full rounded border border-slate-300 px-2 py-1.5"
      />
    </label>
  );
}

/** A limit in minutes (1 to 1440, a day); empty for none. */
function MinutesField({ name, label, defaultValue }: { name: string; label: string; defaultValue: number | null }) {
  return (
    <label className="text-sm">
      {label}
      <input
        name={name}
        type="number"
        min={1}
        max={1440}
        defaultValue={defaultValue ?? ""}
        className="mt-1 block w-full rounded border border-slate-300 px-2 py-1.5"
      />
    </label>
  );
}
