import type { TestGateway } from "../../testing/harness.ts";
import { BASE } from "../../testing/harness.ts";

/** A cookie-keeping client of the dashboard over `app.request` (no browser): what a form post sends. */
export class DashboardClient {
  readonly cookies = new Map<string, string>();
  lastSetCookies: string[] = [];

  constructor(
    private readonly t: TestGateway,
    private readonly headers: Record<string, string> = {},
  ) {}

  async get(path: string): Promise<Response> {
    return this.send("GET", path);
  }

  /** Posts a form; `csrf` is filled in from the given page unless the fields carry their own. */
  async post(path: string, fields: Record<string, string>): Promise<Response> {
    return this.send("POST", path, new URLSearchParams(fields).toString());
  }

  /** Loads `page`, then posts its form fields plus the page's CSRF token to `action`. */
  async submit(page: string, action: string, fields: Record<string, string>): Promise<Response> {
    const html = await (await this.get(page)).text();
    return this.post(action, { csrf: csrfOf(html), ...fields });
  }

  async signIn(email: string, password: string): Promise<Response> {
    return this.submit("/dashboard/login", "/dashboard/login", { email, password });
  }

  private async send(method: string, path: string, body?: string): Promise<Response> {
    const headers: Record<string, string> = { ...this.headers };
    if (this.cookies.size > 0) headers.Cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    if (body !== undefined) headers["Content-Type"] = "application/x-www-form-urlencoded";
    const res = await this.t.gateway.app.request(`${BASE}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
    this.lastSetCookies = res.headers.getSetCookie();
    for (const line of this.lastSetCookies) {
      const [pair] = line.split(";");
      const at = pair?.indexOf("=") ?? -1;
      if (!pair || at < 0) continue;
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1).trim();
      if (value === "" || /max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }
}

export function csrfOf(html: string): string {
  const match = /name="csrf" value="([^"]+)"/.exec(html);
  if (!match?.[1]) throw new Error("no CSRF token on the page");
  return match[1];
}

/** The API key shown once on the keys page after creating one. */
export function shownKey(html: string): string | undefined {
  return /id="new-key" type="text" readonly value="([^"]+)"/.exec(html)?.[1];
}
