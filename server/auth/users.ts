/**
 * Accounts as plain domain functions: make a user with a password (an accepted invitation, the
 * first admin's sign-in link, test fixtures). Passwords are hashed by
 * better-auth (scrypt) and stored only as that hash, in the user's "credential" Account.
 */
import { z } from "zod";
import type { Db } from "../db/client";
import { MIN_PASSWORD_LENGTH, ROLES, type Auth, type Role } from "./auth";

/** Longest password accepted (better-auth's default maximum). */
const MAX_PASSWORD_LENGTH = 128;

export const Email = z.string().trim().toLowerCase().email().max(254);
export const Password = z.string().min(MIN_PASSWORD_LENGTH).max(MAX_PASSWORD_LENGTH);
export const DisplayName = z.string().trim().min(1).max(100);

export const NewUser = z.object({
  email: Email,
  name: DisplayName,
  role: z.enum(ROLES),
  password: Password,
});
export type NewUser = z.input<typeof NewUser>;

export interface UserView {
  id: string;
  email: string;
  name: string;
  role: Role;
}

/** An account already uses this email address. */
export class EmailTakenError extends Error {
  constructor(readonly email: string) {
    super(`an account with ${email} already exists`);
  }
}

/** Creates a user who can sign in with email + password. Throws EmailTakenError or a ZodError. */
export async function createUserWithPassword(db: Db, auth: Auth, input: NewUser): Promise<UserView> {
  const data = NewUser.parse(input);
  if (await db.user.findUnique({ where: { email: data.email }, select: { id: true } })) throw new EmailTakenError(data.email);
  const ctx = await auth.$context;
  const hash = await ctx.password.hash(data.password);
  let user: { id: string };
  try {
    user = await ctx.internalAdapter.createUser(
      { email: data.email, name: data.name, role: data.role, emailVerified: true },
      { method: "admin" },
    );
  } catch (error) {
    if ((error as { code?: string }).code === "P2002") throw new EmailTakenError(data.email);
    throw error;
  }
  try {
    await ctx.internalAdapter.linkAccount({ userId: user.id, providerId: "credential", accountId: user.id, password: hash });
  } catch (error) {
    await db.user.delete({ where: { id: user.id } }).catch(() => undefined);
    throw error;
  }
  return { id: user.id, email: data.email, name: data.name, role: data.role };
}
