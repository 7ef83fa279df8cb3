import Link from "next/link";
import { labsDirFromEnv, listLabs, type Lab } from "@/server/labs/load";

// Lab content is read from disk on every request so an edited lab shows up without a rebuild.
export const dynamic = "force-dynamic";

const TEXT = {
  heading: "ラボ一覧",
  intro: "ラボを選ぶと、レッスンと 3 台のマシンのターミナルが開きます。",
  empty: "ラボがありません。",
  duration: "所要時間",
  minutes: (n: number) => `約 ${n} 分`,
  machines: "マシン",
  brokenHeading: "読み込めなかったラボ",
} as const;

export default async function CatalogPage() {
  const { labs, errors } = await listLabs(labsDirFromEnv());
  return (
    <div className="min-h-0 flex-1 overflow-y-auto">
      <div className="mx-auto max-w-5xl px-6 py-8">
        <h1 className="text-2xl font-bold">{TEXT.heading}</h1>
        <p className="mt-1 text-sm text-slate-600">{TEXT.intro}</p>

        {labs.length === 0 && errors.length === 0 && <p className="mt-8 text-slate-500">{TEXT.empty}</p>}

        <ul className="mt-6 grid gap-4 sm:grid-cols-2" data-testid="lab-catalog">
          {labs.map((lab) => (
            <li key={lab.slug}>
              <LabCard lab={lab} />
            </li>
          ))}
        </ul>

        {errors.length > 0 && (
          <section
            role="alert"
            className="mt-8 rounded-md border border-red-200 bg-red-50 p-4 text-sm text-red-900"
            data-testid="lab-errors"
          >
            <h2 className="font-semibold">{TEXT.brokenHeading}</h2>
            <ul className="mt-2 space-y-2">
              {errors.map((error, i) => (
                <li key={error.slug ?? i}>
                  <pre className="font-mono text-xs whitespace-pre-wrap">{error.message}</pre>
                </li>
              ))}
            </ul>
          </section>
        )}
      </div>
    </div>
  );
}

function LabCard({ lab }: { lab: Lab }) {
  const { manifest } = lab;
  return (
    <Link
      href={`/labs/${lab.slug}`}
      data-lab={lab.slug}
      className="block h-full rounded-lg border border-slate-200 bg-white p-5 shadow-sm transition hover:border-sky-400 hover:shadow-md"
    >
      <h2 className="text-lg font-semibold text-slate-900">{manifest.title}</h2>
      <p className="mt-2 text-sm leading-relaxed text-slate-700">{manifest.summary}</p>
      <dl className="mt-4 flex flex-wrap items-center gap-x-4 gap-y-1 text-xs text-slate-500">
        <div>
          <dt className="sr-only">{TEXT.duration}</dt>
          <dd>{TEXT.minutes(manifest.durationMinutes)}</dd>
        </div>
        <div className="flex items-center gap-1">
          <dt>{TEXT.machines}:</dt>
          {manifest.machines.map((m) => (
            <dd key={m} className="rounded bg-slate-100 px-1.5 py-0.5 font-mono text-slate-700">
              {m}
            </dd>
          ))}
        </div>
      </dl>
    </Link>
  );
}
