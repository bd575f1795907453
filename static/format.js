// Number formatting shared by the tables, the CSV export and the kinds' renderers.

const grouped = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

// formatNumber shows a number for reading: integers with thousands separators (1,048,576), other
// numbers to `digits` significant digits (0.0123, 45.6, 789; 1,235 from 1234.5), and an exponent for
// tiny or huge magnitudes (1.23e-7; 4.56e+12, or 4.56e+6 for a number that is not an integer).
export function formatNumber(x, digits = 3) {
  if (typeof x !== "number") return String(x);
  if (!Number.isFinite(x)) return String(x);
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 1e12 || a < 1e-3) return x.toExponential(digits - 1);
  if (Number.isInteger(x)) return grouped.format(x);
  if (a >= 1e6) return x.toExponential(digits - 1);
  if (a >= 10 ** digits) return grouped.format(Math.round(x)); // 1,234 rather than 1.23e+3
  const s = x.toPrecision(digits);
  return s.includes("e") ? grouped.format(Math.round(x)) : s; // 999.7 rounds up to 1,000
}

// formatValue shows one table value: numbers through formatNumber, strings as they are, and an
// absent value as an empty cell.
export function formatValue(v) {
  if (v === null || v === undefined) return "";
  return typeof v === "number" ? formatNumber(v) : String(v);
}

// csvField writes one value for a CSV file (RFC 4180): numbers at full precision, text quoted when
// it holds a comma, a quote or a line break.
export function csvField(v) {
  if (v === null || v === undefined) return "";
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}
