/** Cookie parsing and the grant's choice on a preview origin (cookies.ts). */
import { expect, it } from "vitest";
import { chooseGrant, clearParentCookie, cookieValues, machineCookieHeader, MACHINE_COOKIE_BYTES, parseCookies } from "./cookies";

const verify = (value: string) => (value.startsWith("good") ? { grant: value } : null);

it("parses every cookie, a name several times, values with '=' kept whole", () => {
  expect(parseCookies(" a=1; labdeck-preview=forged;b=x=y; ;noequals; labdeck-preview=good1 ")).toEqual([
    { name: "a", value: "1" },
    { name: "labdeck-preview", value: "forged" },
    { name: "b", value: "x=y" },
    { name: "labdeck-preview", value: "good1" },
  ]);
  expect(parseCookies(undefined)).toEqual([]);
  expect(cookieValues("labdeck-preview=forged; a=1; labdeck-preview=good1", "labdeck-preview")).toEqual(["forged", "good1"]);
});

it("chooses the value that verifies wherever it stands, and says when another rode along", () => {
  expect(chooseGrant(["forged", "good1"], verify)).toEqual({ claims: { grant: "good1" }, shadowed: true });
  expect(chooseGrant(["good1", "forged"], verify)).toEqual({ claims: { grant: "good1" }, shadowed: true });
  expect(chooseGrant(["good1"], verify)).toEqual({ claims: { grant: "good1" }, shadowed: false });
  expect(chooseGrant(["forged"], verify)).toEqual({ claims: null, shadowed: true });
  expect(chooseGrant([], verify)).toEqual({ claims: null, shadowed: false });
});

it("clears a parent-domain cookie of the name", () => {
  expect(clearParentCookie("labdeck-preview", "preview.localhost")).toBe("labdeck-preview=; Domain=preview.localhost; Path=/; Max-Age=0");
});

it("the machine gets the page's own cookies only, none of Labdeck's, and none past 8 KiB", () => {
  const header = "app=7; labdeck-preview=g; __Host-labdeck-preview=h; labdeck.session_token=s; labdeck_locale=en; labdeckish=1";
  expect(machineCookieHeader(header)).toBe("app=7; labdeckish=1");
  expect(machineCookieHeader("labdeck-preview=g")).toBeNull();
  expect(machineCookieHeader(undefined)).toBeNull();
  const big = Array.from({ length: 12 }, (_, i) => `t${i}=${"x".repeat(3800)}`).join("; ");
  expect(machineCookieHeader(big)).toBeNull();
  const fits = `a=${"x".repeat(MACHINE_COOKIE_BYTES - 2)}`;
  expect(machineCookieHeader(fits)).toBe(fits);
  expect(machineCookieHeader(`${fits}x`)).toBeNull();
});
