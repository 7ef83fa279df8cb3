/**
 * Bringing a cohort's people in from a CSV file: `email,name[,role]` per line (a header line with
 * those names is allowed; role is learner or instructor, learner when empty). Every row is
 * checked first and each problem reported with its line; then, in ONE transaction (all or none):
 * rows whose email has an account (of the row's role) become members at once, the others get
 * invitations bound to the cohort (links in the report; tokens kept only sealed).
 */
import { parse } from "csv-parse/sync";
import { z } from "zod";
import { INVITATION_TTL_MS, newInvitationToken, openInvitationWhere, type InvitationLinks } from "../auth/invitations";
import type { Db } from "../db/client";
import { recordAudit } from "../audit";
import { CohortRuleError, getCohortOrThrow, putMember } from "./cohorts";

/** Largest CSV accepted, in bytes: 256 KiB holds thousands of rows; anything larger is a mistake. */
export const CSV_MAX_BYTES = 256 * 1024;
/** Most data rows in one import (a class is tens of people; this leaves room for a whole school). */
export const CSV_MAX_ROWS = 2_000;
/**
 * Time the import's transaction may take, in ms: Prisma's default (5 s) is too short for the
 * largest file on a loaded machine (2,000 rows measured 5 s with the CPU shared by QEMU guests).
 */
const IMPORT_TRANSACTION_TIMEOUT_MS = 60_000;

const Row = z.object({
  email: z.string().trim().toLowerCase().email().max(254),
  name: z.string().trim().min(1).max(100),
  role: z.preprocess((v) => (v === "" || v === undefined ? "learner" : String(v).trim().toLowerCase()), z.enum(["learner", "instructor"])),
});

export type CsvProblemCode =
  "tooLarge" | "tooManyRows" | "malformed" | "columns" | "email" | "name" | "role" | "duplicate" | "invited" | "wrongRole" | "empty";

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
  /** Invitations made, with their links. Empty when nothing was written. */
  invited: (CsvGoodRow & { url: string })[];
  /** Rows whose email has an account: made members of the cohort. */
  added: CsvGoodRow[];
  /** Rows whose account already was a member (with that role): nothing to do. */
  alreadyMembers: CsvGoodRow[];
  problems: CsvProblem[];
  /** Data rows seen (without the header). */
  rows: number;
}

/** Parses and checks the file's rows on their own (no database): good rows and problems. */
export function parseCohortCsv(input: string | Uint8Array): { good: CsvGoodRow[]; problems: CsvProblem[]; rows: number } {
  const bytes = typeof input === "string" ? Buffer.byteLength(input) : input.byteLength;
  if (bytes > CSV_MAX_BYTES) {
    return {
      good: [],
      rows: 0,
      problems: [{ line: 0, code: "tooLarge", message: `the file has ${bytes} bytes; at most ${CSV_MAX_BYTES} are accepted` }],
    };
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
    return {
      good: [],
      rows: records.length,
      problems: [{ line: 0, code: "tooManyRows", message: `the file has ${records.length} rows; at most ${CSV_MAX_ROWS} are accepted` }],
    };
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
 * Imports a CSV into a cohort: problems per line; in one transaction, existing accounts become
 * members and the other good rows get invitations. An account whose role differs from the row's
 * is a problem (`wrongRole`); an email with an open invitation to this cohort is not invited
 * again (`invited`). `links` seals the tokens and makes the links shown to the admin.
 */
export async function importCohortCsv(
  db: Db,
  cohortId: string,
  input: string | Uint8Array,
  actorId: string | null,
  links: InvitationLinks,
  now = new Date(),
): Promise<CsvImportReport> {
  const cohort = await getCohortOrThrow(db, cohortId);
  if (cohort.endedAt) throw new CohortRuleError("cohortEnded", 409, "the cohort has ended");
  const { good, problems, rows } = parseCohortCsv(input);
  if (good.length === 0) return { invited: [], added: [], alreadyMembers: [], problems, rows };

  return db.$transaction(
    async (tx) => {
      const emails = good.map((r) => r.email);
      const [users, open] = await Promise.all([
        tx.user.findMany({ where: { email: { in: emails } }, select: { id: true, email: true, role: true } }),
        tx.invitation.findMany({ where: { cohortId, email: { in: emails }, ...openInvitationWhere(now) }, select: { email: true } }),
      ]);
      const accounts = new Map(users.map((u) => [u.email, u]));
      const invited = new Set(open.map((i) => i.email));
      const toInvite: (CsvGoodRow & ReturnType<typeof newInvitationToken>)[] = [];
      const added: CsvGoodRow[] = [];
      const alreadyMembers: CsvGoodRow[] = [];
      for (const row of good) {
        const account = accounts.get(row.email);
        if (account && account.role !== row.role) {
          problems.push({
            line: row.line,
            code: "wrongRole",
            message: `${row.email} is a ${account.role}, not a ${row.role}`,
            email: row.email,
          });
        } else if (account) {
          const member = await putMember(tx, cohortId, account, row.role, actorId, "csv", now);
          (member.alreadyMember ? alreadyMembers : added).push(row);
        } else if (invited.has(row.email)) {
          problems.push({
            line: row.line,
            code: "invited",
            message: `${row.email} already has an open invitation to this cohort`,
            email: row.email,
          });
        } else toInvite.push({ ...row, ...newInvitationToken(links.secret) });
      }
      problems.sort((a, b) => a.line - b.line);
      if (toInvite.length > 0) {
        await tx.invitation.createMany({
          data: toInvite.map((r) => ({
            email: r.email,
            role: r.role,
            cohortId,
            tokenHash: r.tokenHash,
            tokenSealed: r.tokenSealed,
            expiresAt: new Date(now.getTime() + INVITATION_TTL_MS),
            createdById: actorId,
          })),
        });
      }
      if (toInvite.length > 0 || added.length > 0) {
        await recordAudit(tx, {
          actorId,
          action: "cohort.import",
          targetType: "cohort",
          targetId: cohortId,
          detail: { invited: toInvite.length, added: added.length, alreadyMembers: alreadyMembers.length, problems: problems.length },
        });
      }
      return {
        invited: toInvite.map(({ token, tokenHash: _h, tokenSealed: _s, ...r }) => ({ ...r, url: links.linkFor(token) })),
        added,
        alreadyMembers,
        problems,
        rows,
      };
    },
    { timeout: IMPORT_TRANSACTION_TIMEOUT_MS },
  );
}

function isHeader(record: string[]): boolean {
  return record[0]?.trim().toLowerCase() === "email" && record[1]?.trim().toLowerCase() === "name";
}
