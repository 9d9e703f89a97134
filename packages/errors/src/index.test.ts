import { describe, expect, expectTypeOf, it } from "vitest";
import { CodedError } from "./index.ts";

type ShelfCode = "SHELF_EMPTY" | "SHELF_FULL";

class ShelfError extends CodedError<ShelfCode> {
  override name = "ShelfError";
}

describe("CodedError", () => {
  it("carries its family's code, its plain message, its cause and its family's name", () => {
    const cause = new Error("disk");
    const error = new ShelfError("SHELF_FULL", "The shelf is full.", { cause });
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ name: "ShelfError", code: "SHELF_FULL", message: "The shelf is full.", cause });
    expect(String(error)).toBe("ShelfError: The shelf is full.");
    expect("cause" in new ShelfError("SHELF_EMPTY", "The shelf is empty.")).toBe(false);
  });

  it("takes only the codes of its family's closed union", () => {
    expectTypeOf(new ShelfError("SHELF_EMPTY", "Empty.").code).toEqualTypeOf<ShelfCode>();
    // @ts-expect-error a code outside the family's union does not compile
    expect(new ShelfError("SHELF_MISSING", "Gone.").code).toBe("SHELF_MISSING");
  });
});
