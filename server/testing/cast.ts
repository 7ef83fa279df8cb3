/** Test helper: the output events of an asciicast v2 text (header line first), joined in order. */
export function castOutput(cast: string): string {
  return cast
    .trim()
    .split("\n")
    .slice(1)
    .map((line) => JSON.parse(line) as [number, string, string])
    .filter((event) => event[1] === "o")
    .map((event) => event[2])
    .join("");
}
