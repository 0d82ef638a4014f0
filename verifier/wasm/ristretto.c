/* ristretto255 for the JavaScript verifier, compiled to WebAssembly (build: verifier/wasm/build.sh).
 *
 * Written for the JavaScript verifier from RFC 9496 (sections 4.3.1 decode, 4.3.2 encode,
 * 4.3.4 element derivation) and the extended twisted Edwards formulas of
 * Hisil-Wong-Carter-Dawson 2008 (add-2008-hwcd-3, dbl-2008-hwcd, a = -1).  Independent of the
 * Python verifier's native code (mpc/_ristretto.c: 5 limbs of 51 bits): here GF(2^255 - 19)
 * has 10 signed limbs of 26/25 bits (radix 2^25.5) and 64-bit products, which WebAssembly has.
 * Cross-checked against @noble/curves in verifier/test/wasm_group.test.mjs.
 *
 * VARIABLE TIME (branches on scalars and points): for public data only (verification).
 *
 * Exports (pointers are byte offsets into the exported memory):
 *   init(consts)            7 field constants, 32 bytes each (see CONSTS in lib/wasm_group.mjs)
 *   alloc(bytes)            a bump allocator over the memory (grows it); reset(mark) frees back
 *   decode(in, n, out)      n encodings -> n affine points (120 bytes each); returns -1, or
 *                           2*i for an invalid encoding i, 2*i+1 for the identity at i
 *   derive(in, n, out)      n 64-byte strings -> n points (RFC 9496 element derivation)
 *   msm(sc, ptr, n, out)    out = encoding of sum sc[i] * P[i], P[i] the point at byte offset
 *                           ptr[i] (scalars 32 bytes LE, < 2^253); Pippenger, signed digits;
 *                           returns 1 when memory ran out
 *   rowsum(n, m, ptr, neg, out) out[i] = encoding of sum_j (-1)^(neg>>j&1) P[ptr[i*m+j]]
 */
#include <stdint.h>

typedef int32_t fe[10];
typedef int64_t i64;
typedef struct { fe X, Y, Z, T; } ge;          /* extended coordinates */
typedef struct { fe ypx, ymx, xy2d; } niels;   /* affine (Z = 1): y+x, y-x, 2dxy */
typedef struct { fe ypx, ymx, z2, t2d; } cached; /* Y+X, Y-X, 2Z, 2dT */

static fe D, D2, SQRT_M1, INVSQRT_A_MINUS_D, SQRT_AD_MINUS_ONE, ONE_MINUS_D_SQ, D_MINUS_ONE_SQ;

/* ---------------------------------------------------------------- memory */
extern unsigned char __heap_base;
static uintptr_t heap_top = 0;
uintptr_t alloc(uint32_t bytes) {
  if (!heap_top) heap_top = (uintptr_t)&__heap_base;
  uintptr_t p = (heap_top + 15) & ~(uintptr_t)15;
  uintptr_t end = p + bytes;
  uintptr_t have = __builtin_wasm_memory_size(0) * 65536u;
  if (end > have) {
    uintptr_t pages = (end - have + 65535u) / 65536u;
    if (__builtin_wasm_memory_grow(0, pages) == (uintptr_t)-1) return 0;
  }
  heap_top = end;
  return p;
}
uintptr_t mark(void) { if (!heap_top) heap_top = (uintptr_t)&__heap_base; return heap_top; }
void reset(uintptr_t m) { heap_top = m; }

/* ---------------------------------------------------------------- field */
static void fe_0(fe h) { for (int i = 0; i < 10; i++) h[i] = 0; }
static void fe_1(fe h) { fe_0(h); h[0] = 1; }
static void fe_copy(fe h, const fe f) { for (int i = 0; i < 10; i++) h[i] = f[i]; }
static void fe_add(fe h, const fe f, const fe g) { for (int i = 0; i < 10; i++) h[i] = f[i] + g[i]; }
static void fe_sub(fe h, const fe f, const fe g) { for (int i = 0; i < 10; i++) h[i] = f[i] - g[i]; }
static void fe_neg(fe h, const fe f) { for (int i = 0; i < 10; i++) h[i] = -f[i]; }

/* carry a wide result into limbs |h_i| <= 2^25 (ref10's order) */
static void carry(fe h, i64 t[10]) {
  i64 c;
#define CARRY(i, bits) c = (t[i] + ((i64)1 << (bits - 1))) >> bits; t[i + 1] += c; t[i] -= c * ((i64)1 << bits);
  CARRY(0, 26) CARRY(4, 26) CARRY(1, 25) CARRY(5, 25) CARRY(2, 26) CARRY(6, 26)
  CARRY(3, 25) CARRY(7, 25) CARRY(4, 26) CARRY(8, 26)
  c = (t[9] + ((i64)1 << 24)) >> 25; t[0] += c * 19; t[9] -= c * ((i64)1 << 25);
  CARRY(0, 26)
#undef CARRY
  for (int i = 0; i < 10; i++) h[i] = (int32_t)t[i];
}
static void fe_reduce(fe h) { i64 t[10]; for (int i = 0; i < 10; i++) t[i] = h[i]; carry(h, t); }

/* limb i has weight 2^ceil(25.5 i): an odd-by-odd product carries a factor 2; a product
   past limb 9 wraps with 19 (2^255 = 19) */
static void fe_mul(fe h, const fe f, const fe g) {
  i64 t[10] = {0};
#pragma clang loop unroll(full)
  for (int i = 0; i < 10; i++) {
#pragma clang loop unroll(full)
    for (int j = 0; j < 10; j++) {
      i64 k = ((i & j & 1) ? 2 : 1) * (i + j >= 10 ? 19 : 1);
      t[(i + j) % 10] += (i64)f[i] * (k * (i64)g[j]);
    }
  }
  carry(h, t);
}
static void fe_sq(fe h, const fe f) {
  i64 t[10] = {0};
#pragma clang loop unroll(full)
  for (int i = 0; i < 10; i++) {
    t[(2 * i) % 10] += (i64)f[i] * ((((i & 1) ? 2 : 1) * (2 * i >= 10 ? 19 : 1)) * (i64)f[i]);
#pragma clang loop unroll(full)
    for (int j = i + 1; j < 10; j++) {
      i64 k = 2 * ((i & j & 1) ? 2 : 1) * (i + j >= 10 ? 19 : 1);
      t[(i + j) % 10] += (i64)f[i] * (k * (i64)f[j]);
    }
  }
  carry(h, t);
}
static void fe_sqn(fe h, const fe f, int n) { fe_sq(h, f); for (int i = 1; i < n; i++) fe_sq(h, h); }

static const int OFF[10] = {0, 26, 51, 77, 102, 128, 153, 179, 204, 230};
static const int BITS[10] = {26, 25, 26, 25, 26, 25, 26, 25, 26, 25};

/* the low 255 bits of s (the top bit is ignored) */
static void fe_frombytes(fe h, const uint8_t *s) {
  for (int i = 0; i < 10; i++) {
    int o = OFF[i];
    uint64_t v = 0;
    for (int b = 0; b < 5 && (o >> 3) + b < 32; b++) v |= (uint64_t)s[(o >> 3) + b] << (8 * b);
    h[i] = (int32_t)((v >> (o & 7)) & ((1u << BITS[i]) - 1));
  }
}
/* canonical little-endian encoding (fully reduced mod p) */
static void fe_tobytes(uint8_t *s, const fe f) {
  fe g; fe_copy(g, f); fe_reduce(g);
  i64 h[10]; for (int i = 0; i < 10; i++) h[i] = g[i];
  i64 q = (19 * h[9] + ((i64)1 << 24)) >> 25;
  for (int i = 0; i < 10; i++) q = (h[i] + q) >> BITS[i];
  h[0] += 19 * q;
  for (int i = 0; i < 9; i++) { i64 c = h[i] >> BITS[i]; h[i + 1] += c; h[i] -= c * ((i64)1 << BITS[i]); }
  h[9] &= ((i64)1 << 25) - 1;
  for (int k = 0; k < 32; k++) s[k] = 0;
  for (int i = 0; i < 10; i++) {
    uint64_t v = (uint64_t)h[i] << (OFF[i] & 7);
    for (int b = 0; b < 5 && (OFF[i] >> 3) + b < 32; b++) s[(OFF[i] >> 3) + b] |= (uint8_t)(v >> (8 * b));
  }
}
static int fe_isneg(const fe f) { uint8_t s[32]; fe_tobytes(s, f); return s[0] & 1; }
static int fe_iszero(const fe f) { uint8_t s[32]; fe_tobytes(s, f); int r = 0; for (int i = 0; i < 32; i++) r |= s[i]; return r == 0; }
static int fe_eq(const fe f, const fe g) { fe d; fe_sub(d, f, g); return fe_iszero(d); }
static void fe_abs(fe h, const fe f) { if (fe_isneg(f)) fe_neg(h, f); else fe_copy(h, f); fe_reduce(h); }

/* z^(2^252 - 3) */
static void fe_pow22523(fe out, const fe z) {
  fe z2, z9, z11, a, b, c, t;
  fe_sq(z2, z); fe_sqn(t, z2, 2); fe_mul(z9, t, z); fe_mul(z11, z9, z2);
  fe_sq(t, z11); fe_mul(a, t, z9);                 /* a = z^(2^5 - 1) */
  fe_sqn(t, a, 5); fe_mul(b, t, a);                /* b = z^(2^10 - 1) */
  fe_sqn(t, b, 10); fe_mul(c, t, b);               /* c = z^(2^20 - 1) */
  fe_sqn(t, c, 20); fe_mul(t, t, c);               /* z^(2^40 - 1) */
  fe_sqn(t, t, 10); fe_mul(a, t, b);               /* a = z^(2^50 - 1) */
  fe_sqn(t, a, 50); fe_mul(b, t, a);               /* b = z^(2^100 - 1) */
  fe_sqn(t, b, 100); fe_mul(t, t, b);              /* z^(2^200 - 1) */
  fe_sqn(t, t, 50); fe_mul(t, t, a);               /* z^(2^250 - 1) */
  fe_sqn(t, t, 2); fe_mul(out, t, z);              /* z^(2^252 - 3) */
}
/* RFC 9496 SQRT_RATIO_M1(u, v): returns was_square, r = the nonnegative root */
static int sqrt_ratio_m1(fe r, const fe u, const fe v) {
  fe v3, v7, t, check, nu, nui;
  fe_sq(t, v); fe_mul(v3, t, v); fe_sq(t, v3); fe_mul(v7, t, v);
  fe_mul(t, u, v7); fe_pow22523(t, t); fe_mul(r, u, v3); fe_mul(r, r, t);
  fe_sq(t, r); fe_mul(check, v, t);
  fe_neg(nu, u); fe_mul(nui, nu, SQRT_M1);
  int correct = fe_eq(check, u), flipped = fe_eq(check, nu), flipped_i = fe_eq(check, nui);
  if (flipped || flipped_i) fe_mul(r, r, SQRT_M1);
  fe_abs(r, r);
  return correct || flipped;
}

/* ---------------------------------------------------------------- group */
static void ge_0(ge *p) { fe_0(p->X); fe_1(p->Y); fe_1(p->Z); fe_0(p->T); }
static void ge_to_niels(niels *n, const ge *p) {   /* p must have Z = 1 */
  fe_add(n->ypx, p->Y, p->X); fe_reduce(n->ypx);
  fe_sub(n->ymx, p->Y, p->X); fe_reduce(n->ymx);
  fe_mul(n->xy2d, p->T, D2);
}
static void niels_to_ge(ge *p, const niels *n) {
  fe t; fe_sub(t, n->ypx, n->ymx); fe_add(p->Y, n->ypx, n->ymx);
  fe two_inv_half; fe_copy(two_inv_half, t);
  /* x = (ypx - ymx)/2, y = (ypx + ymx)/2: multiply by 1/2 = (p+1)/2 */
  static fe HALF; static int half_set = 0;
  if (!half_set) { uint8_t h[32]; for (int i = 0; i < 32; i++) h[i] = 0xff; h[0] = 0xf7; h[31] = 0x3f; fe_frombytes(HALF, h); half_set = 1; }
  fe_mul(p->X, two_inv_half, HALF); fe_mul(p->Y, p->Y, HALF);
  fe_1(p->Z); fe_mul(p->T, p->X, p->Y);
}
static void ge_to_cached(cached *c, const ge *p) {
  fe_add(c->ypx, p->Y, p->X); fe_sub(c->ymx, p->Y, p->X);
  fe_add(c->z2, p->Z, p->Z); fe_mul(c->t2d, p->T, D2);
}
/* r = p + q (sign = 1) or p - q (sign = -1), q affine */
static void ge_madd(ge *r, const ge *p, const niels *q, int sign) {
  fe a, b, c, d, e, f, g, h;
  fe_sub(a, p->Y, p->X); fe_add(b, p->Y, p->X);
  if (sign > 0) { fe_mul(a, a, q->ymx); fe_mul(b, b, q->ypx); fe_mul(c, p->T, q->xy2d); }
  else { fe_mul(a, a, q->ypx); fe_mul(b, b, q->ymx); fe_mul(c, p->T, q->xy2d); fe_neg(c, c); }
  fe_add(d, p->Z, p->Z);
  fe_sub(e, b, a); fe_sub(f, d, c); fe_add(g, d, c); fe_add(h, b, a);
  fe_mul(r->X, e, f); fe_mul(r->Y, g, h); fe_mul(r->T, e, h); fe_mul(r->Z, f, g);
}
static void ge_add(ge *r, const ge *p, const cached *q) {
  fe a, b, c, d, e, f, g, h;
  fe_sub(a, p->Y, p->X); fe_mul(a, a, q->ymx);
  fe_add(b, p->Y, p->X); fe_mul(b, b, q->ypx);
  fe_mul(c, p->T, q->t2d); fe_mul(d, p->Z, q->z2);
  fe_sub(e, b, a); fe_sub(f, d, c); fe_add(g, d, c); fe_add(h, b, a);
  fe_mul(r->X, e, f); fe_mul(r->Y, g, h); fe_mul(r->T, e, h); fe_mul(r->Z, f, g);
}
static void ge_addp(ge *r, const ge *p, const ge *q) { cached c; ge_to_cached(&c, q); ge_add(r, p, &c); }
static void ge_dbl(ge *r, const ge *p) {
  fe a, b, c, e, f, g, h, s;
  fe_sq(a, p->X); fe_sq(b, p->Y); fe_sq(c, p->Z); fe_add(c, c, c);
  fe_add(s, p->X, p->Y); fe_sq(s, s);
  fe_sub(e, s, a); fe_sub(e, e, b); fe_reduce(e);
  fe_sub(g, b, a); fe_sub(f, g, c); fe_reduce(f);
  fe_neg(h, a); fe_sub(h, h, b);
  fe_mul(r->X, e, f); fe_mul(r->Y, g, h); fe_mul(r->T, e, h); fe_mul(r->Z, f, g);
}

/* RFC 9496 4.3.2 */
static void ge_encode(uint8_t *out, const ge *p) {
  fe u1, u2, t, inv, den1, den2, zinv, x, y, ix, iy, den;
  fe_add(t, p->Z, p->Y); fe_sub(u1, p->Z, p->Y); fe_mul(u1, t, u1);
  fe_mul(u2, p->X, p->Y);
  fe_sq(t, u2); fe_mul(t, u1, t);
  fe one; fe_1(one);
  sqrt_ratio_m1(inv, one, t);
  fe_mul(den1, inv, u1); fe_mul(den2, inv, u2);
  fe_mul(zinv, den1, den2); fe_mul(zinv, zinv, p->T);
  fe_mul(ix, p->X, SQRT_M1); fe_mul(iy, p->Y, SQRT_M1);
  fe_mul(t, p->T, zinv);
  if (fe_isneg(t)) { fe_copy(x, iy); fe_copy(y, ix); fe_mul(den, den1, INVSQRT_A_MINUS_D); }
  else { fe_copy(x, p->X); fe_copy(y, p->Y); fe_copy(den, den2); }
  fe_mul(t, x, zinv);
  if (fe_isneg(t)) fe_neg(y, y);
  fe_sub(t, p->Z, y); fe_mul(t, den, t); fe_abs(t, t);
  fe_tobytes(out, t);
}
/* RFC 9496 4.3.1: 0 ok, 1 invalid */
static int ge_decode(ge *p, const uint8_t *s) {
  fe f, ss, u1, u2, u2s, v, t, inv, dx, dy; uint8_t chk[32];
  fe_frombytes(f, s); fe_tobytes(chk, f);
  for (int i = 0; i < 32; i++) if (chk[i] != s[i]) return 1;   /* not canonical (>= p, top bit) */
  if (s[0] & 1) return 1;                                       /* negative */
  fe_sq(ss, f); fe_1(t);
  fe_sub(u1, t, ss); fe_reduce(u1); fe_add(u2, t, ss); fe_reduce(u2);
  fe_sq(u2s, u2);
  fe_sq(v, u1); fe_mul(v, v, D); fe_neg(v, v); fe_sub(v, v, u2s);
  fe_mul(t, v, u2s);
  fe one; fe_1(one);
  int sq = sqrt_ratio_m1(inv, one, t);
  fe_mul(dx, inv, u2); fe_mul(dy, inv, dx); fe_mul(dy, dy, v);
  fe_add(t, f, f); fe_mul(t, t, dx); fe_abs(p->X, t);
  fe_mul(p->Y, u1, dy); fe_1(p->Z); fe_mul(p->T, p->X, p->Y);
  if (!sq || fe_isneg(p->T) || fe_iszero(p->Y)) return 1;
  return 0;
}
/* RFC 9496 4.3.4 MAP */
static void ge_map(ge *p, const uint8_t *b) {
  uint8_t c32[32]; for (int i = 0; i < 32; i++) c32[i] = b[i]; c32[31] &= 0x7f;
  fe t, r, u, v, s, c, n, w0, w1, w2, w3, one, x, y;
  fe_1(one);
  fe_frombytes(t, c32);
  fe_sq(r, t); fe_mul(r, r, SQRT_M1);
  fe_add(u, r, one); fe_mul(u, u, ONE_MINUS_D_SQ);
  fe_mul(x, r, D); fe_neg(x, x); fe_sub(x, x, one); fe_add(y, r, D); fe_mul(v, x, y);
  int sq = sqrt_ratio_m1(s, u, v);
  fe_mul(x, s, t); fe_abs(x, x); fe_neg(x, x);
  if (!sq) fe_copy(s, x);
  if (sq) { fe_neg(c, one); } else fe_copy(c, r);
  fe_sub(x, r, one); fe_mul(n, c, x); fe_mul(n, n, D_MINUS_ONE_SQ); fe_sub(n, n, v); fe_reduce(n);
  fe_add(w0, s, s); fe_mul(w0, w0, v);
  fe_mul(w1, n, SQRT_AD_MINUS_ONE);
  fe_sq(x, s); fe_sub(w2, one, x); fe_add(w3, one, x);
  fe_mul(p->X, w0, w3); fe_mul(p->Y, w2, w1); fe_mul(p->Z, w1, w3); fe_mul(p->T, w0, w2);
}
/* z^(p-2) */
static void fe_invert(fe out, const fe z) {
  fe t, z2; fe_pow22523(t, z); fe_sqn(t, t, 3);   /* z^(2^255 - 24) */
  fe_sq(z2, z); fe_mul(t, t, z2); fe_mul(out, t, z); /* z^(2^255 - 21) = z^(p - 2) */
}
static void ge_affine(niels *n, const ge *p) {
  fe zi; ge a; fe_invert(zi, p->Z);
  fe_mul(a.X, p->X, zi); fe_mul(a.Y, p->Y, zi); fe_1(a.Z); fe_mul(a.T, a.X, a.Y);
  ge_to_niels(n, &a);
}

/* ---------------------------------------------------------------- exports */
#define AT(p) ((const niels *)(uintptr_t)(p))
void init(const uint8_t *k) {
  fe_frombytes(D, k); fe_frombytes(SQRT_M1, k + 32); fe_frombytes(INVSQRT_A_MINUS_D, k + 64);
  fe_frombytes(SQRT_AD_MINUS_ONE, k + 96); fe_frombytes(ONE_MINUS_D_SQ, k + 128);
  fe_frombytes(D_MINUS_ONE_SQ, k + 160); fe_add(D2, D, D); fe_reduce(D2);
}
int decode(const uint8_t *in, int n, niels *out) {
  for (int i = 0; i < n; i++) {
    const uint8_t *s = in + 32 * i;
    int zero = 1; for (int k = 0; k < 32; k++) zero &= s[k] == 0;
    if (zero) return 2 * i + 1;
    ge p;
    if (ge_decode(&p, s)) return 2 * i;
    ge_to_niels(&out[i], &p);
  }
  return -1;
}
void derive(const uint8_t *in, int n, niels *out) {
  for (int i = 0; i < n; i++) {
    ge p, q, r; ge_map(&p, in + 64 * i); ge_map(&q, in + 64 * i + 32);
    ge_addp(&r, &p, &q); ge_affine(&out[i], &r);
  }
}
void encode_niels(const niels *in, int n, uint8_t *out) {
  for (int i = 0; i < n; i++) { ge p; niels_to_ge(&p, &in[i]); ge_encode(out + 32 * i, &p); }
}
void rowsum(int n, int m, const int32_t *ptr, int neg, uint8_t *out) {
  for (int i = 0; i < n; i++) {
    ge acc, t; ge_0(&acc);
    for (int j = 0; j < m; j++) { ge_madd(&t, &acc, AT(ptr[i * m + j]), (neg >> j) & 1 ? -1 : 1); acc = t; }
    ge_encode(out + 32 * i, &acc);
  }
}
static int window_bits(int n) {
  int c = 1; while ((1 << c) < n) c++;   /* ceil(log2 n) */
  c -= 3; if (c < 3) c = 3; if (c > 16) c = 16;
  return c;
}
int msm(const uint8_t *sc, const int32_t *ptr, int n, uint8_t *out) {
  int c = window_bits(n), nwin = (254 + c - 1) / c, nb = 1 << (c - 1);
  uintptr_t m0 = mark();
  ge *buckets = (ge *)alloc(sizeof(ge) * nb);
  ge *sums = (ge *)alloc(sizeof(ge) * nwin);
  uint8_t *carries = (uint8_t *)alloc(n > 0 ? n : 1);
  if (!buckets || !sums || !carries) { reset(m0); return 1; }
  for (int i = 0; i < n; i++) carries[i] = 0;
  for (int w = 0; w < nwin; w++) {
    for (int b = 0; b < nb; b++) ge_0(&buckets[b]);
    int bit = w * c;
    for (int i = 0; i < n; i++) {
      const uint8_t *s = sc + 32 * i;
      uint32_t v = 0;
      for (int k = 0; k < 4 && (bit >> 3) + k < 32; k++) v |= (uint32_t)s[(bit >> 3) + k] << (8 * k);
      int d = (int)((v >> (bit & 7)) & ((1u << c) - 1)) + carries[i];
      if (d > nb) { d -= 1 << c; carries[i] = 1; } else carries[i] = 0;
      /* in place: ge_madd reads p before it writes r */
      if (d > 0) ge_madd(&buckets[d - 1], &buckets[d - 1], AT(ptr[i]), 1);
      else if (d < 0) ge_madd(&buckets[-d - 1], &buckets[-d - 1], AT(ptr[i]), -1);
    }
    ge run, sum, t; ge_0(&run); ge_0(&sum);
    for (int b = nb - 1; b >= 0; b--) { ge_addp(&t, &run, &buckets[b]); run = t; ge_addp(&t, &sum, &run); sum = t; }
    sums[w] = sum;
  }
  ge acc = sums[nwin - 1], t;
  for (int w = nwin - 2; w >= 0; w--) {
    for (int k = 0; k < c; k++) { ge_dbl(&t, &acc); acc = t; }
    ge_addp(&t, &acc, &sums[w]); acc = t;
  }
  ge_encode(out, &acc);
  reset(m0);
  return 0;
}
