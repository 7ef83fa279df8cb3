/**
 * Inviting a cohort's people from a CSV file: `email,name[,role]` per line (a header line with
 * those names is allowed; role is learner or instructor, learner when empty). Every row is
 * checked first and each problem reported with its line; then the good rows' invitations are
 * written in ONE transaction (all of them or none), bound to the cohort. The links are returned
 * once (only their hashes are stored).
 */
import { randomBytes } from "node:crypto";
import { parse } from "csv-parse/sync";
import { z } from "zod";
import { hashInvitationToken, INVITATION_TTL_MS } from "../auth/invitations";
import type { Db } from "../db/client";
import { recordAudit } from "./audit";
import { CohortRuleError, getCohortOrThrow } from "./cohorts";

/** Largest CSV accepted, in bytes: 256 KiB holds thousands of rows; anything larger is a mistake. */
export const CSV_MAX_BYTES = 256 * 1024;
/** Most data rows in one import (a class is tens of people; this leaves room for a whole school). */
export const CSV_MAX_ROWS = 2_000;
/**
 * Time the import's transaction may take, in ms: Prisma's default (5 s) is too short for the
 * largest file on a loaded machine (2,000 rows measured 5 s with the CPU shared by QEMU guests).
 */
const IMPORT_TRANSACTION_TIMEOUT_MS = 60_000;
/** Random bytes in an invitation token (same as server/auth/invitations.ts: 43 base64url characters). */
const TOKEN_BYTES = 32;

const Row = z.object({
  email: z.string().trim().toLowerCase().email().max(254),
  name: z.string().trim().min(1).max(100),
  role: z.preprocess((v) => (v === "" || v === undefined ? "learner" : String(v).trim().toLowerCase()), z.enum(["learner", "instructor"])),
});

export type CsvProblemCode = "tooLarge" | "tooManyRows" | "malformed" | "columns" | "email" | "name" | "role" | "duplicate" | "invited" | "exists" | "empty";

export interface CsvProblem {
  /** 1-based line in the file (0 for the file as a whole). */
  line: number;
  code: CsvProblemCode;
  /** English detail (the UI shows a translated text for `code` and this as detail). */
  message: string;
  email?: string;
}

export interface CsvGoodRow {
  line: number;
  email: string;
  name: string;
  role: "learner" | "instructor";
}

export interface CsvImportReport {
  /** Invitations made (and their links, shown once). Empty when nothing was written. */
  invited: (CsvGoodRow & { url: string })[];
  problems: CsvProblem[];
  /** Data rows seen (without the header). */
  rows: number;
}

/** Parses and checks the file's rows on their own (no database): good rows and problems. */
export function parseCohortCsv(input: string | Uint8Array): { good: CsvGoodRow[]; problems: CsvProblem[]; rows: number } {
  const bytes = typeof input === "string" ? Buffer.byteLength(input) : input.byteLength;
  if (bytes > CSV_MAX_BYTES) {
    return { good: [], rows: 0, problems: [{ line: 0, code: "tooLarge", message: `the file has ${bytes} bytes; at most ${CSV_MAX_BYTES} are accepted` }] };
  }
  const text = typeof input === "string" ? input : Buffer.from(input).toString("utf8");
  let records: { record: string[]; info: { lines: number } }[];
  try {
    records = parse(text, { bom: true, info: true, relax_column_count: true, skip_empty_lines: true, trim: true }) as never;
  } catch (error) {
    const e = error as Error & { lines?: number };
    return { good: [], rows: 0, problems: [{ line: e.lines ?? 0, code: "malformed", message: e.message }] };
  }
  if (records.length > 0 && isHeader(records[0]!.record)) records = records.slice(1);
  if (records.length === 0) return { good: [], rows: 0, problems: [{ line: 0, code: "empty", message: "the file has no rows" }] };
  if (records.length > CSV_MAX_ROWS) {
    return { good: [], rows: records.length, problems: [{ line: 0, code: "tooManyRows", message: `the file has ${records.length} rows; at most ${CSV_MAX_ROWS} are accepted` }] };
  }
  const good: CsvGoodRow[] = [];
  const problems: CsvProblem[] = [];
  const firstLine = new Map<string, number>();
  for (const { record, info } of records) {
    const line = info.lines;
    if (record.length < 2 || record.length > 3) {
      problems.push({ line, code: "columns", message: `expected email,name[,role]; found ${record.length} column(s)` });
      continue;
    }
    const parsed = Row.safeParse({ email: record[0], name: record[1], role: record[2] });
    if (!parsed.success) {
      const field = parsed.error.issues[0]!.path[0] as "email" | "name" | "role";
      problems.push({ line, code: field, message: `${field}: ${parsed.error.issues[0]!.message}`, email: record[0] });
      continue;
    }
    const seen = firstLine.get(parsed.data.email);
    if (seen !== undefined) {
      problems.push({ line, code: "duplicate", message: `${parsed.data.email} is already on line ${seen}`, email: parsed.data.email });
      continue;
    }
    firstLine.set(parsed.data.email, line);
    good.push({ line, ...parsed.data });
  }
  return { good, problems, rows: records.length };
}

/**
 * Imports a CSV into a cohort: problems per line, and invitations for the good rows written in
 * one transaction. Emails that already have an account or an open invitation are reported, not
 * invited again. `linkFor(token)` makes the link shown to the admin.
 */
export async function importCohortCsv(
  db: Db,
  cohortId: string,
  input: string | Uint8Array,
  actorId: string | null,
  linkFor: (token: string) => string,
  now = new Date(),
): Promise<CsvImportReport> {
  const cohort = await getCohortOrThrow(db, cohortId);
  if (cohort.endedAt) throw new CohortRuleError("cohortEnded", 409, "the cohort has ended");
  const { good, problems, rows } = parseCohortCsv(input);
  if (good.length === 0) return { invited: [], problems, rows };

  return db.$transaction(async (tx) => {
    const emails = good.map((r) => r.email);
    const [users, open] = await Promise.all([
      tx.user.findMany({ where: { email: { in: emails } }, select: { email: true } }),
      tx.invitation.findMany({ where: { email: { in: emails }, usedAt: null, expiresAt: { gt: now } }, select: { email: true } }),
    ]);
    const existing = new Set(users.map((u) => u.email));
    const invited = new Set(open.map((i) => i.email));
    const toInvite: (CsvGoodRow & { token: string })[] = [];
    for (const row of good) {
      if (existing.has(row.email)) problems.push({ line: row.line, code: "exists", message: `${row.email} already has an account`, email: row.email });
      else if (invited.has(row.email)) problems.push({ line: row.line, code: "invited", message: `${row.email} already has an open invitation`, email: row.email });
      else toInvite.push({ ...row, token: randomBytes(TOKEN_BYTES).toString("base64url") });
    }
    problems.sort((a, b) => a.line - b.line);
    if (toInvite.length > 0) {
      await tx.invitation.createMany({
        data: toInvite.map((r) => ({
          email: r.email,
          role: r.role,
          cohortId,
          tokenHash: hashInvitationToken(r.token),
          expiresAt: new Date(now.getTime() + INVITATION_TTL_MS),
          createdById: actorId,
        })),
      });
      await recordAudit(tx, { actorId, action: "cohort.import", targetType: "cohort", targetId: cohortId, detail: { invited: toInvite.length, problems: problems.length } });
    }
    return { invited: toInvite.map(({ token, ...r }) => ({ ...r, url: linkFor(token) })), problems, rows };
  }, { timeout: IMPORT_TRANSACTION_TIMEOUT_MS });
}

function isHeader(record: string[]): boolean {
  return record[0]?.trim().toLowerCase() === "email" && record[1]?.trim().toLowerCase() === "name";
}
