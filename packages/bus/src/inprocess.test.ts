import { silentLogger } from "@voiceloc/log";
import { createInProcessBus } from "./inprocess.ts";
import { describeCatalogContract } from "./testing/catalog-contract.ts";
import { describeBusContract } from "./testing/contract.ts";

const makeBus = async () => {
  const bus = createInProcessBus({ logger: silentLogger() });
  return { bus, cleanup: () => bus.close({ graceMs: 5_000 }) };
};

describeBusContract("in-process", makeBus);
describeCatalogContract("in-process", makeBus);
