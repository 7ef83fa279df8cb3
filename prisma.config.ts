import path from "node:path";
import { defineConfig } from "prisma/config";
import { PrismaPg } from "prisma-adapter-pg-cli";

// Prisma 6.19 runs fully offline with its wasm schema engine when the CLI is given a driver
// adapter. The CLI adapter is @prisma/adapter-pg 7.x (installed as prisma-adapter-pg-cli)
// because 6.19.3's fails `migrate deploy` with "Column type 'name' could not be deserialized"
// (prisma/orm#27403). The app itself uses @prisma/adapter-pg 6.19.3 at runtime.
export default defineConfig({
  schema: path.join("prisma", "schema.prisma"),
  experimental: { adapter: true },
  engine: "js",
  async adapter() {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error("DATABASE_URL is not set (the app sets it when it starts embedded PostgreSQL)");
    return new PrismaPg({ connectionString: url });
  },
});
