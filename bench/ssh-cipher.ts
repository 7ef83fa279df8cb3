/**
 * SSH cipher cost in this process's ssh2: throughput of one exec channel's output from an ssh2
 * server to an ssh2 client on loopback (both in this process, so the figure is the decrypt plus
 * encrypt cost per byte), per cipher ssh2 offers, and what ssh2 negotiates by default. The terminal
 * gateway decrypts every byte it relays; the question is which cipher to use.
 *
 *   npx tsx bench/ssh-cipher.ts [--mib 64] [--rounds 3]   (rounds interleaved; the median is printed)
 */
import type net from "node:net";
import ssh2, { type CipherAlgorithm } from "ssh2";
import { z } from "zod";
import { benchFlags } from "./lib/flags";

const { Client, Server, utils } = ssh2; // CommonJS: named exports are not visible to ESM

const flags = benchFlags(
  z.object({ mib: z.coerce.number().int().min(1).max(4096).default(64), rounds: z.coerce.number().int().min(1).max(20).default(3) }),
  "usage: npx tsx bench/ssh-cipher.ts [--mib N] [--rounds N]",
);
const MIB = 1024 * 1024;
const total = flags.mib * MIB;
const CHUNK = 64 * 1024; // bytes per server write (the holder's OUTPUT frame size)
const CIPHERS: CipherAlgorithm[] = ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com", "aes128-ctr"];

const hostKey = utils.generateKeyPairSync("ed25519").private;
const server = new Server({ hostKeys: [hostKey] }, (conn) => {
  conn.on("authentication", (ctx) => ctx.accept());
  conn.on("ready", () =>
    conn.on("session", (accept) => {
      const session = accept();
      session.on("exec", (acceptExec) => {
        const stream = acceptExec();
        const block = Buffer.alloc(CHUNK, 0x78);
        let sent = 0;
        const pump = () => {
          while (sent < total) {
            sent += CHUNK;
            if (!stream.write(block)) return void stream.once("drain", pump);
          }
          stream.exit(0);
          stream.end();
        };
        pump();
      });
    }),
  );
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const port = (server.address() as net.AddressInfo).port;

async function measure(cipher?: CipherAlgorithm): Promise<{ cipher: string; mibPerS: number }> {
  const client = new Client();
  let negotiated = "";
  client.on("handshake", (n) => (negotiated = n.cs.cipher));
  await new Promise<void>((resolve, reject) => {
    client.once("ready", resolve).once("error", reject);
    client.connect({ host: "127.0.0.1", port, username: "bench", password: "x", ...(cipher ? { algorithms: { cipher: [cipher] } } : {}) });
  });
  const started = process.hrtime.bigint();
  let got = 0;
  await new Promise<void>((resolve, reject) =>
    client.exec("flood", (error, stream) => {
      if (error) return reject(error);
      stream.on("data", (chunk: Buffer) => (got += chunk.length));
      stream.on("close", () => resolve());
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  client.end();
  return { cipher: negotiated, mibPerS: Math.round((got / MIB / seconds) * 10) / 10 };
}

const rounds = flags.rounds;
const runs = new Map<string, number[]>();
for (let i = 0; i < rounds; i++) {
  for (const cipher of [undefined, ...CIPHERS]) {
    const r = await measure(cipher);
    const key = cipher ? r.cipher : `${r.cipher} (default)`;
    runs.set(key, [...(runs.get(key) ?? []), r.mibPerS]);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`\nssh2 ${total / MIB} MiB exec output over loopback, server and client in one process; median of ${rounds}`);
console.log(`${"cipher".padEnd(40)}${"MiB/s".padStart(8)}  runs`);
for (const [cipher, xs] of runs) console.log(`${cipher.padEnd(40)}${String(median(xs)).padStart(8)}  ${xs.join(" ")}`);
console.log(JSON.stringify(Object.fromEntries([...runs].map(([k, xs]) => [k, median(xs)]))));
server.close();
process.exit(0);
