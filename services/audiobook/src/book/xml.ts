/**
 * A small element tree of an XML (or XHTML) package file — container.xml, the OPF, the NCX, the
 * EPUB 3 navigation document — built with htmlparser2, which reads no DTD: external entities are
 * never fetched and internal ones never expanded (an undeclared-to-it reference is dropped).
 */
import { Parser } from "htmlparser2";
import { feed } from "./html.ts";

export interface XmlElement {
  /** The qualified name in lower case (`dc:title`, `navpoint`). */
  name: string;
  /** Attributes by lower-case qualified name. */
  attrs: Record<string, string>;
  children: Array<XmlElement | string>;
}

const UNKNOWN_ENTITY = /&[A-Za-z_:][\w.:-]*;/gu;

/** Parses `source` (xmlMode for package files; HTML entities too for navigation documents). */
export function parseXml(source: string, mode: "xml" | "xhtml" = "xml"): XmlElement {
  const root: XmlElement = { name: "#root", attrs: {}, children: [] };
  const stack: XmlElement[] = [root];
  const parser = new Parser(
    {
      onopentag(name, attrs) {
        const element: XmlElement = { name: name.toLowerCase(), attrs: {}, children: [] };
        for (const [k, v] of Object.entries(attrs)) element.attrs[k.toLowerCase()] = v;
        stack[stack.length - 1]?.children.push(element);
        stack.push(element);
      },
      onclosetag() {
        if (stack.length > 1) stack.pop();
      },
      ontext(data) {
        stack[stack.length - 1]?.children.push(data.replace(UNKNOWN_ENTITY, ""));
      },
    },
    mode === "xml"
      ? { xmlMode: true, decodeEntities: true }
      : { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true, recognizeSelfClosing: true, recognizeCDATA: true },
  );
  feed(parser, source);
  return root;
}

/** The name without its namespace prefix. */
export const localName = (name: string): string => name.slice(name.lastIndexOf(":") + 1);

/** Every descendant element whose local name is `name`, in document order. */
export function descendants(element: XmlElement, name: string): XmlElement[] {
  const found: XmlElement[] = [];
  const walk = (e: XmlElement) => {
    for (const child of e.children) {
      if (typeof child === "string") continue;
      if (localName(child.name) === name) found.push(child);
      walk(child);
    }
  };
  walk(element);
  return found;
}

/** The element children whose local name is `name`. */
export const childrenNamed = (element: XmlElement, name: string): XmlElement[] =>
  element.children.filter((c): c is XmlElement => typeof c !== "string" && localName(c.name) === name);

/** An attribute by local name (`full-path`, `href`; `epub:type` needs its prefix). */
export function attr(element: XmlElement, name: string): string | undefined {
  if (name in element.attrs) return element.attrs[name];
  for (const [k, v] of Object.entries(element.attrs)) if (localName(k) === name) return v;
  return undefined;
}

/** The text content, whitespace collapsed. */
export function textOf(element: XmlElement): string {
  let out = "";
  const walk = (e: XmlElement) => {
    for (const child of e.children) {
      if (typeof child === "string") out += child;
      else walk(child);
    }
  };
  walk(element);
  return out.replace(/\s+/gu, " ").trim();
}
