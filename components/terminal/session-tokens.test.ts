/**
 * Terminal tokens in the page: the terminals of one page refused together (a restarted server, an
 * expired token) ask the session API once, not once each; tokens say how old they are, so a
 * connect renews them before the server's 10 minutes run out. The session API is a recorded
 * stand-in for fetch (the far edge); the module under test is the page's own.
 */
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { sessionTokens, tokensAgeMs } from "./session-tokens";

let posts: number;

beforeEach(() => {
  posts = 0;
  vi.stubGlobal("fetch", async () => {
    posts++;
    return new Response(JSON.stringify({ sessionId: "s1", machines: [{ name: "node01", token: `t${posts}` }] }), { status: 200 });
  });
});
afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

it("asks once for the terminals refused together, again once the tokens are a few seconds old, and says their age", async () => {
  vi.useFakeTimers({ toFake: ["Date"] });
  expect(tokensAgeMs("lab-a")).toBe(Infinity);
  expect((await sessionTokens("lab-a")).tokens.get("node01")).toBe("t1");
  // Three terminals refused at once: one new request between them.
  const again = await Promise.all([sessionTokens("lab-a", true), sessionTokens("lab-a", true), sessionTokens("lab-a", true)]);
  expect(posts).toBe(1);
  expect(again.every((t) => t.tokens.get("node01") === "t1")).toBe(true);
  vi.setSystemTime(Date.now() + 6_000);
  expect(tokensAgeMs("lab-a")).toBeGreaterThanOrEqual(6_000);
  const renewed = await Promise.all([sessionTokens("lab-a", true), sessionTokens("lab-a", true)]);
  expect(posts).toBe(2);
  expect(renewed.every((t) => t.tokens.get("node01") === "t2")).toBe(true);
  expect(tokensAgeMs("lab-a")).toBeLessThan(1_000);
});
