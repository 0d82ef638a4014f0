// Canonical JSON of docs/spec/01-encodings.md section 1 (spec version 1).
// A JSON parser that keeps the integer/float distinction of every number, and the
// canonical serialiser: sorted keys (by code point), no spaces, ASCII-only escapes,
// integers in decimal, floats in the shortest round-trip form with the exponent rules
// of the spec.

export class JFloat {
  constructor(value) { this.value = value; }
}

export function parse(text) {
  let i = 0;
  const n = text.length;
  const ws = () => { while (i < n && ' \t\n\r'.includes(text[i])) i++; };
  const fail = (what) => { throw new SyntaxError(`invalid JSON at offset ${i}: ${what}`); };
  function value() {
    ws();
    const c = text[i];
    if (c === '{') {
      i++; const obj = Object.create(null); ws();
      if (text[i] === '}') { i++; return obj; }
      for (;;) {
        ws(); if (text[i] !== '"') fail('expected a key');
        const k = str(); ws(); if (text[i] !== ':') fail('expected :'); i++;
        if (Object.hasOwn(obj, k)) fail(`duplicate key ${JSON.stringify(k)}`);  // spec T-3
        obj[k] = value(); ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; return obj; }
        fail('expected , or }');
      }
    }
    if (c === '[') {
      i++; const arr = []; ws();
      if (text[i] === ']') { i++; return arr; }
      for (;;) {
        arr.push(value()); ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; return arr; }
        fail('expected , or ]');
      }
    }
    if (c === '"') return str();
    if (text.startsWith('true', i)) { i += 4; return true; }
    if (text.startsWith('false', i)) { i += 5; return false; }
    if (text.startsWith('null', i)) { i += 4; return null; }
    if (text.startsWith('NaN', i)) { i += 3; return new JFloat(NaN); }
    if (text.startsWith('Infinity', i)) { i += 8; return new JFloat(Infinity); }
    if (text.startsWith('-Infinity', i)) { i += 9; return new JFloat(-Infinity); }
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) fail('unexpected character');
    i += m[0].length;
    if (m[2] === undefined && m[3] === undefined) return BigInt(m[0]);
    return new JFloat(Number(m[0]));
  }
  function str() {
    i++; let out = '';
    for (;;) {
      if (i >= n) fail('unterminated string');
      const c = text[i++];
      if (c === '"') return out;
      if (c === '\\') {
        const e = text[i++];
        const simple = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
        if (e in simple) out += simple[e];
        else if (e === 'u') {
          const h = text.slice(i, i + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(h)) fail('bad \\u escape');
          out += String.fromCharCode(parseInt(h, 16)); i += 4;
        } else fail('bad escape');
      } else {
        if (c.charCodeAt(0) < 0x20) fail('control character in string');
        out += c;
      }
    }
  }
  const v = value(); ws();
  if (i !== n) fail('trailing data');
  return v;
}

// Float text, spec 01 section 1.3: shortest round-trip digits; fixed notation with at least one
// fractional digit when -4 <= exponent < 16, else d[.ddd]e(+|-)XX with at least 2 exponent digits.
export function formatFloat(x) {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const sign = x < 0 ? '-' : '';
  const [mant, expS] = Math.abs(x).toExponential().split('e'); // shortest round-trip digits
  const digits = mant.replace('.', '');
  const exp = Number(expS);
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      const intPart = digits.length > exp + 1 ? digits.slice(0, exp + 1) : digits.padEnd(exp + 1, '0');
      const frac = digits.length > exp + 1 ? digits.slice(exp + 1) : '0';
      return `${sign}${intPart}.${frac}`;
    }
    return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  }
  const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const e = Math.abs(exp).toString().padStart(2, '0');
  return `${sign}${m}e${exp < 0 ? '-' : '+'}${e}`;
}

export function quote(s) {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (cp >= 0x20 && cp <= 0x7e) out += ch;
    else if (cp < 0x10000) out += '\\u' + cp.toString(16).padStart(4, '0');
    else {
      const v = cp - 0x10000;
      out += '\\u' + (0xd800 + (v >> 10)).toString(16) + '\\u' + (0xdc00 + (v & 0x3ff)).toString(16);
    }
  }
  return out + '"';
}

function cmpCodePoints(a, b) {
  const A = Array.from(a, (c) => c.codePointAt(0));
  const B = Array.from(b, (c) => c.codePointAt(0));
  for (let k = 0; k < Math.min(A.length, B.length); k++) if (A[k] !== B[k]) return A[k] - B[k];
  return A.length - B.length;
}

export function canonical(v) {
  if (v === null) return 'null';
  if (v === true) return 'true';
  if (v === false) return 'false';
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof JFloat) return formatFloat(v.value);
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : formatFloat(v);
  if (typeof v === 'string') return quote(v);
  if (Array.isArray(v)) return '[' + v.map(canonical).join(',') + ']';
  const keys = Object.keys(v).sort(cmpCodePoints);
  return '{' + keys.map((k) => quote(k) + ':' + canonical(v[k])).join(',') + '}';
}

// Plain JS value of a parsed JSON value (bigints that fit become numbers, floats numbers).
export function plain(v) {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v;
  if (v instanceof JFloat) return v.value;
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') {
    const o = {};
    for (const k of Object.keys(v)) o[k] = plain(v[k]);
    return o;
  }
  return v;
}
