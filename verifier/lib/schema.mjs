// D-2 (docs/spec/06-estimates.md): the public parameters of an own-data run, derived from the
// schema it publishes (`run.params.schema`, TOML text) and `run.params.users`, never from data.
import { parse as parseToml } from 'smol-toml';

const MAX_RUN_DOMAIN = 2 ** 24;  // values of one attribute (items of a universe) a run can count

const isInt = (v) => typeof v === 'bigint' || Number.isInteger(v);
const fail = (where, msg) => { throw new Error(`params.schema: ${where}: ${msg} (spec 06 D-2)`); };

// the size of one domain: exactly one of values (its length), range (high - low + 1), bins
// (edges - 1); `bins` only where `allowBins`
function domainSize(t, where, allowBins) {
  const keys = ['values', 'range', ...(allowBins ? ['bins'] : [])].filter((k) => t[k] !== undefined);
  if (keys.length !== 1) fail(where, `needs exactly one domain of ${allowBins ? 'values, range, bins' : 'values, range'}, has ${keys.length}`);
  const v = t[keys[0]];
  if (!Array.isArray(v)) fail(where, `${keys[0]} is not a list`);
  if (keys[0] === 'values') {
    if (new Set(v.map(String)).size !== v.length) fail(where, 'values repeat');
    return v.length;
  }
  if (keys[0] === 'range') {
    if (v.length !== 2 || !v.every(isInt) || Number(v[0]) > Number(v[1])) fail(where, 'range must be [low, high], integers, low <= high');
    return Number(v[1]) - Number(v[0]) + 1;
  }
  const e = v.map(Number);
  if (e.length < 2 || !e.every(Number.isFinite) || e.some((x, i) => i > 0 && !(x > e[i - 1]))) fail(where, 'bin edges must be at least 2 strictly increasing numbers');
  return e.length - 1;
}

const checkSize = (k, where) => {
  if (!(k >= 2 && k <= MAX_RUN_DOMAIN)) fail(where, `domain of ${k} values (a run counts 2 .. ${MAX_RUN_DOMAIN})`);
  return k;
};

// {kind: 'categorical', attributes, domainSizes, n} | {kind: 'setvalued', d, maxItems, n} |
// {kind: 'numeric', n}; null when the run has no schema (bundled data); throws on a schema
// no honest run can have published
export function publicSchema(params) {
  if (params.schema === undefined) return null;
  if (typeof params.schema !== 'string') fail('the schema', 'is not TOML text');
  let doc;
  try { doc = parseToml(params.schema, { integersAsBigInt: true }); } catch (e) { fail('the schema', `not TOML (${e.message.split('\n')[0]})`); }
  if (doc.schema !== undefined && Number(doc.schema) !== 1) fail('schema', `format version ${doc.schema} (this verifier knows 1)`);
  if (params.users === undefined || !isInt(params.users) || Number(params.users) < 2) fail('users', 'an own-data run states its public number of users, an integer >= 2 (params.users)');
  const n = Number(params.users);
  if (doc.kind === 'categorical') {
    const attrs = doc.attribute;
    if (!Array.isArray(attrs) || !attrs.length) fail('attribute', 'a categorical schema lists at least one [[attribute]]');
    const attributes = [], domainSizes = [];
    for (const [j, a] of attrs.entries()) {
      const where = `attribute[${j}]`;
      if (typeof a.name !== 'string') fail(where, 'has no name');
      if (a.other !== undefined && typeof a.other !== 'string') fail(where, 'other is not a text');
      attributes.push(a.name);
      domainSizes.push(checkSize(domainSize(a, where, true) + (a.other === undefined ? 0 : 1), where));
    }
    if (new Set(attributes).size !== attributes.length) fail('attribute', 'names repeat');
    return { kind: 'categorical', attributes, domainSizes, n };
  }
  if (doc.kind === 'setvalued') {
    const it = doc.items;
    if (!it || typeof it !== 'object' || Array.isArray(it)) fail('items', 'a set-valued schema has an [items] table');
    const d = checkSize(domainSize(it, 'items', false), 'items');
    if (it.max_items !== undefined && !(isInt(it.max_items) && Number(it.max_items) >= 1)) fail('items.max_items', 'is not an integer >= 1');
    return { kind: 'setvalued', d, maxItems: it.max_items === undefined ? null : Number(it.max_items), n };
  }
  if (doc.kind === 'numeric') return { kind: 'numeric', n };
  return fail('kind', `${JSON.stringify(doc.kind)} is not categorical, setvalued or numeric`);
}
