/** Signed claims (terminal tokens, preview codes and grants): what is accepted and what is refused. */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { signClaims, verifyClaims } from "./signed";

const Claims = z.strictObject({ sid: z.string(), exp: z.number() });
const key = randomBytes(32);

describe("signed claims", () => {
  it("reads back what was signed under the same key", () => {
    expect(verifyClaims(key, signClaims(key, { sid: "s1", exp: 5 }), Claims)).toEqual({ sid: "s1", exp: 5 });
  });

  it("refuses another key, a changed body or signature, extra parts, a body the schema refuses, and an overlong value", () => {
    const value = signClaims(key, { sid: "s1", exp: 5 });
    const [body, sig] = value.split(".");
    const forged = Buffer.from(JSON.stringify({ sid: "s2", exp: 5 })).toString("base64url");
    expect(verifyClaims(randomBytes(32), value, Claims)).toBeNull();
    expect(verifyClaims(key, `${forged}.${sig}`, Claims)).toBeNull();
    expect(verifyClaims(key, `${body}.${sig!.slice(0, -2)}xx`, Claims)).toBeNull();
    expect(verifyClaims(key, `${value}.x`, Claims)).toBeNull();
    expect(verifyClaims(key, signClaims(key, { sid: "s1", exp: 5, admin: true }), Claims)).toBeNull();
    expect(verifyClaims(key, signClaims(key, { sid: "x".repeat(5000), exp: 5 }), Claims)).toBeNull();
    expect(verifyClaims(key, "not json.at all", Claims)).toBeNull();
  });
});
