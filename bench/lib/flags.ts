/**
 * Command-line flags of a bench script: every `--name value` pair is a string that the bench's zod
 * object coerces and bounds; an unknown flag, a positional argument or a bad value prints what is
 * wrong and the usage line, and exits 2 before anything starts.
 */
import { parseArgs } from "node:util";
import type { z } from "zod";

export function benchFlags<Shape extends z.ZodRawShape>(
  schema: z.ZodObject<Shape>,
  usage: string,
  args = process.argv.slice(2),
): z.infer<z.ZodObject<Shape>> {
  const options = Object.fromEntries(Object.keys(schema.shape).map((name) => [name, { type: "string" as const }]));
  try {
    const { values } = parseArgs({ args, options, strict: true, allowPositionals: false });
    const parsed = schema.safeParse(values);
    if (parsed.success) return parsed.data;
    console.error(parsed.error.issues.map((i) => `--${i.path.join(".")}: ${i.message}`).join("\n") + "\n" + usage);
  } catch (error) {
    console.error(`${(error as Error).message}\n${usage}`);
  }
  process.exit(2);
}
