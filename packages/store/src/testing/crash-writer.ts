/**
 * Child process for the durability test: opens the embedded store in the
 * directory given as the first argument and writes until it is killed.
 * After each write has committed it prints one line on stdout:
 *   `inserted <n>` / `inserted-many <from> <to>` / `updated <n> <seq>`.
 */
import { openEmbeddedStore } from "../sqlite.ts";
import { crashDoc, crashDocId } from "./crash-doc.ts";
import type { CrashDoc } from "./crash-doc.ts";

const dir = process.argv[2];
if (!dir) {
  process.stderr.write("usage: crash-writer <dir>\n");
  process.exit(2);
}

const say = (line: string) =>
  new Promise<void>((resolve, reject) => {
    process.stdout.write(`${line}\n`, (err) => (err ? reject(err) : resolve()));
  });

const store = await openEmbeddedStore({ dir });
const col = await store.collection<CrashDoc>({
  name: "crash",
  indexes: [{ fields: [["n", -1], ["id", 1]] }],
});
await say("ready");

let n = 0;
for (let round = 1; ; round++) {
  if (round % 3 === 0) {
    const from = n;
    const docs = Array.from({ length: 25 }, () => crashDoc(n++));
    await col.insertMany(docs);
    await say(`inserted-many ${from} ${n - 1}`);
  } else {
    await col.insert(crashDoc(n));
    await say(`inserted ${n}`);
    n++;
  }
  if (round % 4 === 0 && n > 10) {
    const target = (round * 7919) % n;
    const seq = round;
    const updated = await col.updateOne({ id: crashDocId(target), seq: { $lt: seq } }, { seq });
    if (updated) await say(`updated ${target} ${seq}`);
  }
}
