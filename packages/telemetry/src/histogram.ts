/**
 * A histogram for the request path: each label set's child is looked up once and then observes with
 * a bucket search and three additions (prom-client's own histogram builds and hashes a label string on
 * every observe). Registered in the prom-client registry, which formats it like any histogram.
 */
import type { Registry } from "prom-client";

export interface HistogramChild {
  observe(seconds: number): void;
}

class Child implements HistogramChild {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Record<string, string>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(seconds: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && seconds > (bounds[i] as number)) i += 1;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += seconds;
    this.count += 1;
  }
}

export class FastHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  readonly #children = new Map<string, Child>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly bounds: readonly number[],
    registers: Registry[],
  ) {
    for (const registry of registers) registry.registerMetric(this as never);
  }

  /** The child of these label values (in labelNames order); look it up once and keep it. */
  labels(...values: string[]): HistogramChild {
    const key = values.join("\u0000");
    let child = this.#children.get(key);
    if (child === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => (labels[name] = values[i] ?? ""));
      child = new Child(labels, this.bounds);
      this.#children.set(key, child);
    }
    return child;
  }

  /** prom-client's metric shape: cumulative `_bucket` rows (with `le`), `_sum` and `_count` per child. */
  async get() {
    const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
    for (const child of this.#children.values()) {
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += child.counts[i] as number;
        values.push({ metricName: `${this.name}_bucket`, labels: { ...child.labels, le: bound }, value: cumulative });
      });
      cumulative += child.counts[this.bounds.length] as number;
      values.push({ metricName: `${this.name}_bucket`, labels: { ...child.labels, le: "+Inf" }, value: cumulative });
      values.push({ metricName: `${this.name}_sum`, labels: child.labels, value: child.sum });
      values.push({ metricName: `${this.name}_count`, labels: child.labels, value: child.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.#children.clear();
  }
}
