import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { Env, parseEnv, previewBase } from "./config";

describe("environment", () => {
  it("applies defaults", () => {
    const env = parseEnv({});
    expect(env.PORT).toBe(3000);
    expect(env.HOST).toBe("127.0.0.1");
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.LABDECK_TIME_ZONE).toBe("Asia/Tokyo");
  });

  it("the web preview's base: preview.localhost on Labdeck's port by default, else LABDECK_PREVIEW_URL (http(s), no path)", () => {
    expect(previewBase(parseEnv({ PORT: "3217" }))).toEqual({ scheme: "http", host: "preview.localhost", port: "3217" });
    expect(previewBase(parseEnv({ PORT: "0" }), 41234)).toEqual({ scheme: "http", host: "preview.localhost", port: "41234" });
    expect(previewBase(parseEnv({ LABDECK_PREVIEW_URL: "https://Preview.Labs-Content.example" }))).toEqual({
      scheme: "https",
      host: "preview.labs-content.example",
      port: "",
    });
    for (const bad of ["ftp://preview.example", "https://preview.example/sub", "preview.example"])
      expect(() => parseEnv({ LABDECK_PREVIEW_URL: bad }), bad).toThrow(/LABDECK_PREVIEW_URL/);
  });

  it("takes an IANA time zone in its canonical spelling", () => {
    expect(parseEnv({ LABDECK_TIME_ZONE: "America/New_York" }).LABDECK_TIME_ZONE).toBe("America/New_York");
    expect(parseEnv({ LABDECK_TIME_ZONE: " europe/berlin " }).LABDECK_TIME_ZONE).toBe("Europe/Berlin");
    expect(parseEnv({ LABDECK_TIME_ZONE: "UTC" }).LABDECK_TIME_ZONE).toBe("UTC");
  });

  it("reads the labs' prepared warm sets as slug:reserve[:initial[:cap]]", () => {
    expect(parseEnv({}).LABDECK_POOL_LABS).toEqual([]);
    expect(parseEnv({ LABDECK_POOL_LABS: "preinstall-checks:2, hello-terminal:1:5:40" }).LABDECK_POOL_LABS).toEqual([
      { labSlug: "preinstall-checks", reserve: 2, initial: 2, cap: null },
      { labSlug: "hello-terminal", reserve: 1, initial: 5, cap: 40 },
    ]);
  });

  it.each([
    [{ LABDECK_POOL_LABS: "preinstall-checks" }, "LABDECK_POOL_LABS"],
    [{ LABDECK_POOL_LABS: "Preinstall:1" }, "LABDECK_POOL_LABS"],
    [{ LABDECK_POOL_LABS: "a:1:2:3:4" }, "LABDECK_POOL_LABS"],
    [{ LABDECK_VM_MEMORY_MIB: "64" }, "LABDECK_VM_MEMORY_MIB"],
    [{ PORT: "99999" }, "PORT"],
    [{ PORT: "abc" }, "PORT"],
    [{ DATABASE_URL: "not a url" }, "DATABASE_URL"],
    [{ LABDECK_SECRET: "short" }, "LABDECK_SECRET"],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL"],
    [{ LABDECK_TIME_ZONE: "Mars/Olympus_Mons" }, "LABDECK_TIME_ZONE"],
    [{ LABDECK_TIME_ZONE: "+09:00" }, "LABDECK_TIME_ZONE"],
    [{ LABDECK_TIME_ZONE: "JST" }, "LABDECK_TIME_ZONE"],
  ])("rejects %o naming the variable", (source, name) => {
    expect(() => parseEnv(source)).toThrow(new RegExp(`invalid environment:[\\s\\S]*${name}`));
  });
});

describe("docker-compose.yml", () => {
  const compose = parse(fs.readFileSync("docker-compose.yml", "utf8")) as {
    services: Record<
      string,
      { environment?: Record<string, string>; depends_on?: Record<string, unknown>; build?: string; image?: string }
    >;
  };

  it("runs PostgreSQL, two app replicas after the database is healthy, and nginx in front of them", () => {
    expect(Object.keys(compose.services).sort()).toEqual(["app1", "app2", "db", "proxy"]);
    expect(compose.services.db!.image).toMatch(/^postgres:/);
    for (const app of ["app1", "app2"]) {
      expect(compose.services[app]!.build).toBe(".");
      expect(compose.services[app]!.depends_on).toEqual({ db: { condition: "service_healthy" } });
    }
    expect(compose.services.proxy!.image).toMatch(/^nginx:/);
    expect(fs.existsSync("Dockerfile")).toBe(true);
    // The proxy's configuration names both replicas (e2e/replicas.spec.ts runs it for real).
    const nginx = fs.readFileSync("deploy/nginx.conf", "utf8");
    expect(nginx).toMatch(/server app1:3000/);
    expect(nginx).toMatch(/server app2:3000/);
  });

  it("gives each replica only variables the server knows, the same secret and an external DATABASE_URL", () => {
    for (const app of ["app1", "app2"]) {
      const env = compose.services[app]!.environment!;
      const known = Object.keys(Env.shape);
      expect(Object.keys(env).filter((k) => !known.includes(k))).toEqual([]);
      expect(env.DATABASE_URL).toMatch(/^postgresql:\/\/labdeck:.*@db:5432\/labdeck$/);
      expect(env.LABDECK_SECRET).toBe(compose.services.app1!.environment!.LABDECK_SECRET);
    }
  });
});
