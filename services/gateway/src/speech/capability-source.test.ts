import { afterEach, describe, expect, it } from "vitest";
import { createCatalogBus, createInProcessBus, type Bus, type BusSubscription } from "@voiceloc/bus";
import { BUS_CATALOG, capabilitiesFor, capabilityRequestName, type Capabilities, type CapabilityKind } from "@voiceloc/contracts";
import { silentLogger } from "@voiceloc/log";
import { busCapabilities } from "./capability-source.ts";

const full: Capabilities = {
  synthesis: { languages: ["English", "Spanish"] },
  recognition: { languages: ["English"] },
  translation: { pairs: [{ source: "English", target: "Spanish", pivot: null, quality: "rule-based" }] },
  cloning: { available: false, languages: [] },
  voices: [{ name: "espeak:es", language: "Spanish", engine: "espeak", description: "", default: true }],
};
/** A synthesis image: voices, no translation or recognition engines. */
const speechOnly: Capabilities = { ...full, recognition: { languages: [] }, translation: { pairs: [] } };

const logger = silentLogger();
let bus: Bus;
const subs: BusSubscription[] = [];

afterEach(async () => {
  for (const s of subs.splice(0)) await s.stop();
  await bus?.close();
});

async function answer(kind: CapabilityKind, table: () => Capabilities): Promise<void> {
  subs.push(await createCatalogBus(bus, BUS_CATALOG).serve(capabilityRequestName(kind), () => capabilitiesFor(kind, table())));
}

describe("busCapabilities", () => {
  it("asks each kind's workers for their own table, never another kind's", async () => {
    bus = createInProcessBus({ logger });
    await answer("synthesis", () => speechOnly);
    await answer("audiobook", () => full);
    const caps = busCapabilities(bus, logger, 0);
    expect((await caps.get("audiobook"))?.translation.pairs).toEqual(full.translation.pairs);
    expect((await caps.get("synthesis"))?.translation.pairs).toEqual([]);
    // No voice-stream or subtitle worker: nothing to check against.
    expect(await caps.get("voice-stream")).toBeNull();
    expect(await caps.get("subtitle")).toBeNull();
  });

  it("without a kind, unites the kinds that answer; null when none does", async () => {
    bus = createInProcessBus({ logger });
    const caps = busCapabilities(bus, logger, 0);
    expect(await caps.get()).toBeNull();
    await answer("synthesis", () => speechOnly);
    await answer("subtitle", () => full);
    const merged = await caps.get();
    expect(merged?.synthesis.languages).toEqual(["English", "Spanish"]);
    expect(merged?.recognition.languages).toEqual(["English"]);
    expect(merged?.translation.pairs).toEqual(full.translation.pairs);
    expect(merged?.voices.map((v) => v.name)).toEqual(["espeak:es"]);
  });

  it("caches each kind's answer on its own, and a kind that did not answer is asked again", async () => {
    bus = createInProcessBus({ logger });
    let table = full;
    await answer("audiobook", () => table);
    const caps = busCapabilities(bus, logger, 60_000);
    expect((await caps.get("audiobook"))?.translation.pairs).toHaveLength(1);
    table = speechOnly;
    expect((await caps.get("audiobook"))?.translation.pairs).toHaveLength(1);
    expect(await caps.get("subtitle")).toBeNull();
    await answer("subtitle", () => full);
    expect((await caps.get("subtitle"))?.recognition.languages).toEqual(["English"]);
  });
});
