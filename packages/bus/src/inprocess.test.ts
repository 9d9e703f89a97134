import { silentLogger } from "@voiceloc/log";
import { createInProcessBus } from "./inprocess.ts";
import { describeBusContract } from "./testing/contract.ts";

describeBusContract("in-process", async () => {
  const bus = createInProcessBus({ logger: silentLogger() });
  return { bus, cleanup: () => bus.close({ graceMs: 5_000 }) };
});
