/**
 * What the catalogue types refuse at compile time (checked by `tsc` in `pnpm check`: each
 * `@ts-expect-error` fails the typecheck if the line it guards ever compiles), and the run-time guard
 * behind the types.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import { silentLogger } from "@voiceloc/log";
import { createCatalogBus, type ReplyErrorCode, type RequestResult } from "./catalog.ts";
import { InvalidArgumentError } from "./errors.ts";
import { createInProcessBus } from "./inprocess.ts";
import { testCatalog, type Order } from "./testing/catalog-contract.ts";

type Catalog = ReturnType<typeof testCatalog>;

/** Never called: its body only has to typecheck (or fail to, where marked). */
async function compileTimeContract(): Promise<void> {
  const typed = createCatalogBus(createInProcessBus({ logger: silentLogger() }), testCatalog());

  await typed.publishWork("orders", { id: "o", qty: 1 });
  // @ts-expect-error a payload missing a field of the contract
  await typed.publishWork("orders", { id: "o" });
  // @ts-expect-error a field of the wrong type
  await typed.publishWork("orders", { id: "o", qty: "1" });
  // @ts-expect-error a queue the catalogue does not declare
  await typed.publishWork("refunds", { id: "o", qty: 1 });
  // @ts-expect-error an event payload of another family
  await typed.publishEvent("shipped", { id: "o", qty: 1 });

  await typed.consumeWork("orders", async (ctx) => {
    expectTypeOf(ctx.data).toEqualTypeOf<Order>();
    return { kind: "ack" };
  });

  await typed.serve("quote", (request, { refuse }) => {
    expectTypeOf(request).toEqualTypeOf<{ item: string }>();
    if (request.item === "") return refuse("unknown_item", "no item");
    // @ts-expect-error a refusal code outside the contract
    if (request.item === "x") return refuse("sold_out", "free-string code");
    return { cents: 1 };
  });
  // @ts-expect-error a reply outside the contract
  await typed.serve("quote", () => ({ price: 1 }));

  const result = await typed.request("quote", { item: "tea" });
  expectTypeOf(result).toEqualTypeOf<RequestResult<{ cents: number }, "out_of_stock" | "unknown_item">>();
  // A mapping of the reply codes must name every one of them, system codes included.
  const complete: Record<ReplyErrorCode<Catalog, "quote">, number> = { out_of_stock: 409, unknown_item: 422, invalid_request: 502, internal: 502 };
  // @ts-expect-error a mapping that forgets a code fails to compile
  const incomplete: Record<ReplyErrorCode<Catalog, "quote">, number> = { out_of_stock: 409, invalid_request: 502, internal: 502 };
  void complete;
  void incomplete;
  // @ts-expect-error a request payload outside the contract
  await typed.request("quote", { item: 1 });
}

describe("catalogue-typed bus", () => {
  it("typechecks the contract (see compileTimeContract)", () => {
    expectTypeOf(compileTimeContract).returns.resolves.toBeVoid();
  });

  it("refuses a name the catalogue does not declare, even when the types are bypassed", async () => {
    const bus = createInProcessBus({ logger: silentLogger() });
    const typed = createCatalogBus(bus, testCatalog());
    const loose = typed as unknown as { publishWork(name: string, payload: unknown): Promise<unknown>; request(name: string, payload: unknown): Promise<unknown> };
    await expect(loose.publishWork("refunds", { id: "o", qty: 1 })).rejects.toThrow(InvalidArgumentError);
    await expect(loose.request("toString", {})).rejects.toThrow(/no request called "toString"/);
    await bus.close();
  });
});
