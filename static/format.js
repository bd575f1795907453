// Number formatting shared by the tables, the CSV export and the kinds' renderers.

const grouped = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

// Words for large magnitudes, largest first.
const WORDS = [[1e12, "trillion"], [1e9, "billion"], [1e6, "million"]];
const SUPERSCRIPT = { "-": "⁻", "+": "", 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹" };

// formatNumber shows a number for reading, never as a machine writes it (4.67e+10): integers below
// a trillion with thousands separators (1,048,576), other numbers to `digits` significant digits
// (0.0123, 45.6, 789; 1,235 from 1234.5), from a million on in words ("794 million", "46.7 billion",
// "3.14 trillion"), from 10¹⁵ on as a power of ten the way the lessons write them ("3.14·10²³"), and
// tiny magnitudes in exponent notation, as relative errors are read (1.23e-7). Go's cells.Number
// writes sentences' numbers alike.
export function formatNumber(x, digits = 3) {
  if (typeof x !== "number") return String(x);
  if (!Number.isFinite(x)) return String(x);
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a < 1e-3) return x.toExponential(digits - 1);
  if (Number.isInteger(x) && a < 1e12) return grouped.format(x);
  const r = Number(x.toPrecision(digits)); // rounded first: 999,999.7 is "1 million"
  if (Math.abs(r) >= 1e15) {
    const [mant, exp] = r.toExponential(digits - 1).split("e");
    const m = mant.includes(".") ? mant.replace(/\.?0+$/, "") : mant;
    return `${m}·10${[...exp].map((c) => SUPERSCRIPT[c]).join("")}`;
  }
  const word = WORDS.find(([v]) => Math.abs(r) >= v);
  if (word) return `${Number((r / word[0]).toPrecision(Math.max(digits, 3)))} ${word[1]}`;
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
