/**
 * The catalogue-typed bus (`createCatalogBus`) on an adapter: payloads parsed on the way out, subjects and
 * message ids derived from the catalogue, refusals carried as codes of the contract, never as free strings.
 * Run it from an adapter's test file beside `describeBusContract`.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { INTERNAL_REPLY_MESSAGE, createCatalogBus, type CatalogBus } from "../catalog.ts";
import { InvalidArgumentError, NoRespondersError } from "../errors.ts";
import type { Bus, Schema, StreamSpec, WorkQueueSpec } from "../types.ts";
import { waitFor, type BusFixture } from "./contract.ts";

export interface Order {
  id: string;
  qty: number;
}

export interface Shipped {
  order: string;
  seq: number;
}

function object(input: unknown): Record<string, unknown> {
  if (typeof input !== "object" || input === null || Array.isArray(input)) throw new Error("expected an object");
  return input as Record<string, unknown>;
}

export const OrderSchema: Schema<Order> = {
  parse(input) {
    const o = object(input);
    if (typeof o.id !== "string" || o.id === "" || typeof o.qty !== "number" || !(o.qty > 0)) throw new Error("expected { id, qty > 0 }");
    return { id: o.id, qty: o.qty };
  },
};

const ShippedSchema: Schema<Shipped> = {
  parse(input) {
    const o = object(input);
    if (typeof o.order !== "string" || typeof o.seq !== "number") throw new Error("expected { order, seq }");
    return { order: o.order, seq: o.seq };
  },
};

const QuoteSchema: Schema<{ item: string }> = {
  parse(input) {
    const o = object(input);
    if (typeof o.item !== "string") throw new Error("expected { item }");
    return { item: o.item };
  },
};

const PriceSchema: Schema<{ cents: number }> = {
  parse(input) {
    const o = object(input);
    if (typeof o.cents !== "number" || !Number.isInteger(o.cents)) throw new Error("expected { cents: integer }");
    return { cents: o.cents };
  },
};

export const QUOTE_REFUSALS = ["out_of_stock", "unknown_item"] as const;

let counter = 0;

/** A fresh catalogue (own stream, queue and subjects) per test. */
export function testCatalog() {
  const id = `k${++counter}${Math.random().toString(36).slice(2, 8)}`;
  const queue: WorkQueueSpec = { stream: `W_${id}`, name: `orders_${id}`, subject: `${id}.work.orders`, ackWaitMs: 5_000, maxDeliver: 3, backoffMs: [200] };
  const streams: StreamSpec[] = [
    { name: `W_${id}`, subjects: [`${id}.work.>`], kind: "work" },
    { name: `E_${id}`, subjects: [`${id}.ev.>`], kind: "events" },
  ];
  return {
    id,
    streams,
    work: {
      orders: { queue, payload: OrderSchema, messageId: (order: Order) => order.id },
    },
    events: {
      shipped: {
        pattern: `${id}.ev.shipped.>`,
        payload: ShippedSchema,
        subject: (event: Shipped) => `${id}.ev.shipped.${event.order}`,
        messageId: (event: Shipped) => `${event.order}:${event.seq}`,
      },
    },
    requests: {
      quote: { subject: `${id}.svc.quote`, queue: `quote_${id}`, request: QuoteSchema, reply: PriceSchema, errors: QUOTE_REFUSALS, timeoutMs: 10_000 },
    },
  };
}

type TestCatalog = ReturnType<typeof testCatalog>;

export function describeCatalogContract(name: string, makeBus: () => Promise<BusFixture>): void {
  describe(`catalogue-typed bus: ${name}`, { timeout: 60_000 }, () => {
    let fixture: BusFixture;
    let bus: Bus;
    let catalog: TestCatalog;
    let typed: CatalogBus<TestCatalog>;

    beforeEach(async () => {
      fixture = await makeBus();
      bus = fixture.bus;
      catalog = testCatalog();
      typed = createCatalogBus(bus, catalog);
      await bus.provision({ streams: catalog.streams, queues: [catalog.work.orders.queue] });
    });

    afterEach(async () => {
      await fixture.cleanup();
    });

    it("publishes work by name on the queue's subject, deduplicated by the catalogue's message id", async () => {
      const seen: Array<{ data: Order; msgId: string | undefined; subject: string }> = [];
      await typed.consumeWork("orders", async (ctx) => {
        seen.push({ data: ctx.data, msgId: ctx.msgId, subject: ctx.subject });
        return { kind: "ack" };
      });
      const first = await typed.publishWork("orders", { id: "o-1", qty: 2 });
      const again = await typed.publishWork("orders", { id: "o-1", qty: 2 });
      await typed.publishWork("orders", { id: "o-2", qty: 1 });
      expect(first.duplicate).toBe(false);
      expect(again.duplicate).toBe(true);
      await waitFor(() => seen.length >= 2, "both orders");
      expect(seen).toEqual([
        { data: { id: "o-1", qty: 2 }, msgId: "o-1", subject: catalog.work.orders.queue.subject },
        { data: { id: "o-2", qty: 1 }, msgId: "o-2", subject: catalog.work.orders.queue.subject },
      ]);
    });

    it("refuses to publish a payload that breaks its contract, before it reaches the bus", async () => {
      const seen: Order[] = [];
      await typed.consumeWork("orders", async (ctx) => {
        seen.push(ctx.data);
        return { kind: "ack" };
      });
      const bad = { id: "o-bad", qty: -1 };
      await expect(typed.publishWork("orders", bad)).rejects.toBeInstanceOf(InvalidArgumentError);
      // The good message published afterwards is the first and only one the queue delivers.
      await typed.publishWork("orders", { id: "o-good", qty: 1 });
      await waitFor(() => seen.length >= 1, "the valid order");
      expect(seen).toEqual([{ id: "o-good", qty: 1 }]);
    });

    it("publishes events on the subject derived from the payload, deduplicated by its message id", async () => {
      const seen: Array<{ subject: string; data: Shipped }> = [];
      await typed.subscribeEvents("shipped", (event) => void seen.push({ subject: event.subject, data: event.data }), { durable: `d_${catalog.id}` });
      expect((await typed.publishEvent("shipped", { order: "o-7", seq: 1 })).duplicate).toBe(false);
      expect((await typed.publishEvent("shipped", { order: "o-7", seq: 1 })).duplicate).toBe(true);
      await typed.publishEvent("shipped", { order: "o-8", seq: 1 });
      await waitFor(() => seen.length >= 2, "two events");
      expect(seen).toEqual([
        { subject: `${catalog.id}.ev.shipped.o-7`, data: { order: "o-7", seq: 1 } },
        { subject: `${catalog.id}.ev.shipped.o-8`, data: { order: "o-8", seq: 1 } },
      ]);
    });

    it("answers a request with its parsed reply, and a refusal as a code of the contract", async () => {
      await typed.serve("quote", (request, { refuse }) => {
        if (request.item === "gold") return refuse("out_of_stock", "Gold is sold out.");
        if (request.item === "unicorn") return refuse("unknown_item", "There is no unicorn.");
        return { cents: request.item.length * 100 };
      });
      expect(await typed.request("quote", { item: "tea" })).toEqual({ ok: true, reply: { cents: 300 } });
      expect(await typed.request("quote", { item: "gold" })).toEqual({ ok: false, code: "out_of_stock", message: "Gold is sold out." });
      expect(await typed.request("quote", { item: "unicorn" })).toEqual({ ok: false, code: "unknown_item", message: "There is no unicorn." });
    });

    it("replies `internal` in plain words for a thrown error or a reply outside the contract, and hands the error to the server", async () => {
      const internals: unknown[] = [];
      await typed.serve(
        "quote",
        (request) => {
          if (request.item === "boom") throw new Error("ENOENT /var/lib/secret/path at 0x7ffd1234");
          return { cents: 1.5 };
        },
        { onInternalError: (error) => internals.push(error) },
      );
      const thrown = await typed.request("quote", { item: "boom" });
      expect(thrown).toEqual({ ok: false, code: "internal", message: INTERNAL_REPLY_MESSAGE });
      const badReply = await typed.request("quote", { item: "tea" });
      expect(badReply).toEqual({ ok: false, code: "internal", message: INTERNAL_REPLY_MESSAGE });
      expect(internals).toHaveLength(2);
      expect((internals[0] as Error).message).toContain("ENOENT");
    });

    it("reports a code outside the contract as `internal`, and a payload the server cannot parse as `invalid_request`", async () => {
      // An untyped server of the same subject, as a drifted peer would be.
      await bus.serve(
        catalog.requests.quote.subject,
        QuoteSchema,
        () => {
          throw Object.assign(new Error("free-string failure"), { code: "made_up_code" });
        },
        { queue: catalog.requests.quote.queue },
      );
      expect(await typed.request("quote", { item: "tea" })).toEqual({ ok: false, code: "internal", message: INTERNAL_REPLY_MESSAGE });
      // A requester whose contract lets anything out, as a drifted peer would be.
      const { quote } = catalog.requests;
      const loose = createCatalogBus(bus, { work: {}, events: {}, requests: { quote: { ...quote, request: { parse: (x: unknown) => x } } } });
      const invalid = await loose.request("quote", { wrong: true });
      expect(invalid).toMatchObject({ ok: false, code: "invalid_request" });
    });

    it("throws transport failures instead of reporting them as refusals", async () => {
      await expect(typed.request("quote", { item: "tea" }, { timeoutMs: 5_000 })).rejects.toBeInstanceOf(NoRespondersError);
      await expect(typed.request("quote", { item: 42 } as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    });
  });
}
