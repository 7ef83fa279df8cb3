/** Signs a user in through better-auth's API, as the login form does: the Cookie header a browser would then send. */
import type { Auth } from "../auth/auth";

export async function signInCookie(auth: Auth, email: string, password: string): Promise<string> {
  const response = await auth.api.signInEmail({ body: { email, password }, asResponse: true });
  if (response.status !== 200) throw new Error(`sign-in of ${email}: HTTP ${response.status} ${await response.text()}`);
  return response.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
}
