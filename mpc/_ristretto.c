/* Native ristretto255 for the verifier: decode/encode (RFC 9496) and multi-scalar multiplication.
 *
 * Written for this project from RFC 9496 (sections 4.2-4.3) and the extended twisted Edwards
 * formulas of Hisil-Wong-Carter-Dawson 2008 (add-2008-hwcd-3, dbl-2008-hwcd).  No code is
 * copied from libsodium or curve25519-dalek.  Field: GF(2^255-19), 5 limbs of 51 bits,
 * 128-bit products.
 *
 * VARIABLE TIME: decode and msm branch on scalars and points; use them only where the scalars
 * are public (verification).  Secret scalars go only through ct_mul (constant time, below) or
 * libsodium (docs/security.md).
 *
 * Python API (module mpc._ristretto):
 *   decode(blob, allow_identity) -> bytes | int
 *       blob = n concatenated 32-byte encodings; returns the n points in internal form
 *       (affine "Niels" coordinates y+x, y-x, 2dxy: 120 bytes each) or the index of the first
 *       invalid (non-canonical, not on the group, or identity when not allowed) encoding.
 *   msm(scalars, table) -> bytes
 *       scalars = n concatenated 32-byte little-endian scalars, each < 2^253; table from
 *       decode; returns the canonical encoding of sum scalars[i] * P[i].  Straus for small n,
 *       Pippenger (signed digits, window chosen from n) above.  Releases the GIL.
 *   encode(table) -> bytes     re-encodes decoded points (tests).
 *   ct_msm(scalars, table) -> bytes
 *       CONSTANT TIME in the scalars: sum s_i P_i by Straus with masked table lookups.
 *   ct_table(base) -> bytes    fixed-base table of a public base (64 x 8 multiples).
 *   ct_mul(tables, scalar_blobs, addends) -> bytes
 *       CONSTANT TIME in the scalars: n encodings of sum_k s_k[i] B_k (+ addends[i], a decoded
 *       table of public points, or None).  For the prover's secret scalars.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

typedef unsigned __int128 u128;
typedef uint64_t fe[5];
static const uint64_t MASK51 = (((uint64_t)1) << 51) - 1;

/* ---------------------------------------------------------------- field */

static void fe_copy(fe h, const fe f) { memcpy(h, f, sizeof(fe)); }
static void fe_0(fe h) { memset(h, 0, sizeof(fe)); }
static void fe_1(fe h) { fe_0(h); h[0] = 1; }

static void fe_carry(fe h) {
    uint64_t c;
    c = h[0] >> 51; h[0] &= MASK51; h[1] += c;
    c = h[1] >> 51; h[1] &= MASK51; h[2] += c;
    c = h[2] >> 51; h[2] &= MASK51; h[3] += c;
    c = h[3] >> 51; h[3] &= MASK51; h[4] += c;
    c = h[4] >> 51; h[4] &= MASK51; h[0] += 19 * c;
}

static void fe_add(fe h, const fe f, const fe g) {  /* inputs < 2^52 per limb -> < 2^53 */
    for (int i = 0; i < 5; i++) h[i] = f[i] + g[i];
}

static void fe_sub(fe h, const fe f, const fe g) {  /* f + 4p - g, carried; g < 2^53 */
    h[0] = f[0] + ((((uint64_t)1) << 53) - 76) - g[0];
    for (int i = 1; i < 5; i++) h[i] = f[i] + ((((uint64_t)1) << 53) - 4) - g[i];
    fe_carry(h);
}

static void fe_neg(fe h, const fe f) { fe z; fe_0(z); fe_sub(h, z, f); }

static void fe_reduce_mul(fe h, u128 r0, u128 r1, u128 r2, u128 r3, u128 r4) {
    uint64_t c;
    r1 += (uint64_t)(r0 >> 51); uint64_t h0 = (uint64_t)r0 & MASK51;
    r2 += (uint64_t)(r1 >> 51); uint64_t h1 = (uint64_t)r1 & MASK51;
    r3 += (uint64_t)(r2 >> 51); uint64_t h2 = (uint64_t)r2 & MASK51;
    r4 += (uint64_t)(r3 >> 51); uint64_t h3 = (uint64_t)r3 & MASK51;
    u128 t = (u128)h0 + (r4 >> 51) * 19; uint64_t h4 = (uint64_t)r4 & MASK51;
    h0 = (uint64_t)t & MASK51; c = (uint64_t)(t >> 51);
    h1 += c;
    h[0] = h0; h[1] = h1; h[2] = h2; h[3] = h3; h[4] = h4;
}

static void fe_mul(fe h, const fe f, const fe g) {
    uint64_t f0 = f[0], f1 = f[1], f2 = f[2], f3 = f[3], f4 = f[4];
    uint64_t g0 = g[0], g1 = g[1], g2 = g[2], g3 = g[3], g4 = g[4];
    uint64_t g1_19 = 19 * g1, g2_19 = 19 * g2, g3_19 = 19 * g3, g4_19 = 19 * g4;
    u128 r0 = (u128)f0 * g0 + (u128)f1 * g4_19 + (u128)f2 * g3_19 + (u128)f3 * g2_19 + (u128)f4 * g1_19;
    u128 r1 = (u128)f0 * g1 + (u128)f1 * g0 + (u128)f2 * g4_19 + (u128)f3 * g3_19 + (u128)f4 * g2_19;
    u128 r2 = (u128)f0 * g2 + (u128)f1 * g1 + (u128)f2 * g0 + (u128)f3 * g4_19 + (u128)f4 * g3_19;
    u128 r3 = (u128)f0 * g3 + (u128)f1 * g2 + (u128)f2 * g1 + (u128)f3 * g0 + (u128)f4 * g4_19;
    u128 r4 = (u128)f0 * g4 + (u128)f1 * g3 + (u128)f2 * g2 + (u128)f3 * g1 + (u128)f4 * g0;
    fe_reduce_mul(h, r0, r1, r2, r3, r4);
}

static void fe_sq(fe h, const fe f) {
    uint64_t f0 = f[0], f1 = f[1], f2 = f[2], f3 = f[3], f4 = f[4];
    uint64_t f0_2 = 2 * f0, f1_2 = 2 * f1;
    uint64_t f3_19 = 19 * f3, f4_19 = 19 * f4;
    u128 r0 = (u128)f0 * f0 + (u128)f1_2 * f4_19 + (u128)(2 * f2) * f3_19;
    u128 r1 = (u128)f0_2 * f1 + (u128)(2 * f2) * f4_19 + (u128)f3 * f3_19;
    u128 r2 = (u128)f0_2 * f2 + (u128)f1 * f1 + (u128)(2 * f3) * f4_19;
    u128 r3 = (u128)f0_2 * f3 + (u128)f1_2 * f2 + (u128)f4 * f4_19;
    u128 r4 = (u128)f0_2 * f4 + (u128)f1_2 * f3 + (u128)f2 * f2;
    fe_reduce_mul(h, r0, r1, r2, r3, r4);
}

static void fe_sqn(fe h, const fe f, int n) {
    fe_sq(h, f);
    for (int i = 1; i < n; i++) fe_sq(h, h);
}

static void fe_frombytes(fe h, const uint8_t s[32]) {  /* ignores bit 255 */
    uint64_t x[4];
    for (int i = 0; i < 4; i++) {
        uint64_t v = 0;
        for (int j = 7; j >= 0; j--) v = (v << 8) | s[8 * i + j];
        x[i] = v;
    }
    h[0] = x[0] & MASK51;
    h[1] = ((x[0] >> 51) | (x[1] << 13)) & MASK51;
    h[2] = ((x[1] >> 38) | (x[2] << 26)) & MASK51;
    h[3] = ((x[2] >> 25) | (x[3] << 39)) & MASK51;
    h[4] = (x[3] >> 12) & MASK51;
}

static void fe_tobytes(uint8_t s[32], const fe f) {  /* canonical (fully reduced) */
    fe h;
    fe_copy(h, f);
    fe_carry(h);
    fe_carry(h);
    uint64_t q = (h[0] + 19) >> 51;
    q = (h[1] + q) >> 51;
    q = (h[2] + q) >> 51;
    q = (h[3] + q) >> 51;
    q = (h[4] + q) >> 51;
    h[0] += 19 * q;
    uint64_t c;
    c = h[0] >> 51; h[0] &= MASK51; h[1] += c;
    c = h[1] >> 51; h[1] &= MASK51; h[2] += c;
    c = h[2] >> 51; h[2] &= MASK51; h[3] += c;
    c = h[3] >> 51; h[3] &= MASK51; h[4] += c;
    h[4] &= MASK51;
    uint64_t x[4];
    x[0] = h[0] | (h[1] << 51);
    x[1] = (h[1] >> 13) | (h[2] << 38);
    x[2] = (h[2] >> 26) | (h[3] << 25);
    x[3] = (h[3] >> 39) | (h[4] << 12);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++) s[8 * i + j] = (uint8_t)(x[i] >> (8 * j));
}

/* Helpers below are branch-free (constant time in their inputs): fe_tobytes, fe_isneg,
 * fe_iszero, fe_eq, fe_cmov, fe_abs; so are fe_sqrt_ratio_m1 and ristretto_encode, which the
 * constant-time fixed-base path (ct_*) uses on secret-dependent points. */
static int fe_isneg(const fe f) { uint8_t s[32]; fe_tobytes(s, f); return s[0] & 1; }

static int fe_iszero(const fe f) {
    uint8_t s[32];
    uint32_t z = 0;
    fe_tobytes(s, f);
    for (int i = 0; i < 32; i++) z |= s[i];
    return (int)(1 & ((z - 1) >> 8));
}

static int fe_eq(const fe f, const fe g) {
    uint8_t a[32], b[32];
    uint32_t z = 0;
    fe_tobytes(a, f);
    fe_tobytes(b, g);
    for (int i = 0; i < 32; i++) z |= (uint32_t)(a[i] ^ b[i]);
    return (int)(1 & ((z - 1) >> 8));
}

/* f = g where bit == 1 (bit is 0 or 1), without branching */
static void fe_cmov(fe f, const fe g, uint64_t bit) {
    uint64_t m = (uint64_t)0 - bit;
    for (int i = 0; i < 5; i++) f[i] ^= m & (f[i] ^ g[i]);
}

static void fe_abs(fe h, const fe f) {
    fe n;
    fe_neg(n, f);
    fe_copy(h, f);
    fe_cmov(h, n, (uint64_t)fe_isneg(f));
}

/* z^(2^252 - 3) */
static void fe_pow22523(fe out, const fe z) {
    fe t0, t1, t2;
    fe_sq(t0, z);
    fe_sqn(t1, t0, 2);
    fe_mul(t1, z, t1);        /* z^9 */
    fe_mul(t0, t0, t1);       /* z^11 */
    fe_sq(t0, t0);            /* z^22 */
    fe_mul(t0, t1, t0);       /* 2^5 - 1 */
    fe_sqn(t1, t0, 5);
    fe_mul(t0, t1, t0);       /* 2^10 - 1 */
    fe_sqn(t1, t0, 10);
    fe_mul(t1, t1, t0);       /* 2^20 - 1 */
    fe_sqn(t2, t1, 20);
    fe_mul(t1, t2, t1);       /* 2^40 - 1 */
    fe_sqn(t1, t1, 10);
    fe_mul(t0, t1, t0);       /* 2^50 - 1 */
    fe_sqn(t1, t0, 50);
    fe_mul(t1, t1, t0);       /* 2^100 - 1 */
    fe_sqn(t2, t1, 100);
    fe_mul(t1, t2, t1);       /* 2^200 - 1 */
    fe_sqn(t1, t1, 50);
    fe_mul(t0, t1, t0);       /* 2^250 - 1 */
    fe_sqn(t0, t0, 2);        /* 2^252 - 4 */
    fe_mul(out, t0, z);       /* 2^252 - 3 */
}

static fe C_D, C_D2, C_SQRT_M1, C_INVSQRT_A_MINUS_D;

static const uint8_t B_D[32] = {163, 120, 89, 19, 202, 77, 235, 117, 171, 216, 65, 65, 77, 10, 112, 0,
                                152, 232, 121, 119, 121, 64, 199, 140, 115, 254, 111, 43, 238, 108, 3, 82};
static const uint8_t B_D2[32] = {89, 241, 178, 38, 148, 155, 214, 235, 86, 177, 131, 130, 154, 20, 224, 0,
                                 48, 209, 243, 238, 242, 128, 142, 25, 231, 252, 223, 86, 220, 217, 6, 36};
static const uint8_t B_SQRT_M1[32] = {176, 160, 14, 74, 39, 27, 238, 196, 120, 228, 47, 173, 6, 24, 67, 47,
                                      167, 215, 251, 61, 153, 0, 77, 43, 11, 223, 193, 79, 128, 36, 131, 43};
static const uint8_t B_INVSQRT_A_MINUS_D[32] = {234, 64, 93, 128, 170, 253, 200, 153, 190, 114, 65, 90, 23, 22, 47, 157,
                                                64, 216, 1, 254, 145, 123, 194, 22, 162, 252, 175, 207, 5, 137, 108, 120};

/* RFC 9496 SQRT_RATIO_M1(u, v): returns was_square, r = abs(sqrt(u/v)) or abs(sqrt(i*u/v)). */
static int fe_sqrt_ratio_m1(fe r, const fe u, const fe v) {
    fe v3, v7, t, check, nu, nui;
    fe_sq(v3, v);
    fe_mul(v3, v3, v);        /* v^3 */
    fe_sq(v7, v3);
    fe_mul(v7, v7, v);        /* v^7 */
    fe_mul(t, u, v7);
    fe_pow22523(t, t);        /* (u v^7)^((p-5)/8) */
    fe_mul(t, t, v3);
    fe_mul(r, t, u);          /* r = u v^3 (u v^7)^((p-5)/8) */
    fe_sq(check, r);
    fe_mul(check, check, v);
    fe_neg(nu, u);
    fe_mul(nui, nu, C_SQRT_M1);
    int correct = fe_eq(check, u);
    int flipped = fe_eq(check, nu);
    int flipped_i = fe_eq(check, nui);
    fe ri;
    fe_mul(ri, r, C_SQRT_M1);
    fe_cmov(r, ri, (uint64_t)(flipped | flipped_i));
    fe_abs(r, r);
    return correct | flipped;
}

/* ---------------------------------------------------------------- group */

typedef struct { fe X, Y, Z, T; } ge;          /* extended: x = X/Z, y = Y/Z, xy = T/Z */
typedef struct { fe ypx, ymx, t2d; } ge_niels; /* affine: y+x, y-x, 2dxy */
typedef struct { fe ypx, ymx, Z, t2d; } ge_cached;

static void ge_identity(ge *p) { fe_0(p->X); fe_1(p->Y); fe_1(p->Z); fe_0(p->T); }

static void ge_to_cached(ge_cached *c, const ge *p) {
    fe_add(c->ypx, p->Y, p->X);
    fe_sub(c->ymx, p->Y, p->X);
    fe_copy(c->Z, p->Z);
    fe_mul(c->t2d, p->T, C_D2);
}

/* r = p + q (q cached), or p - q when neg */
static void ge_add_cached(ge *r, const ge *p, const ge_cached *q, int neg) {
    fe a, b, c, d, e, f, g, h, t;
    fe_sub(t, p->Y, p->X);
    fe_mul(a, t, neg ? q->ypx : q->ymx);
    fe_add(t, p->Y, p->X);
    fe_mul(b, t, neg ? q->ymx : q->ypx);
    fe_mul(c, p->T, q->t2d);
    if (neg) fe_neg(c, c);
    fe_mul(d, p->Z, q->Z);
    fe_add(d, d, d);
    fe_sub(e, b, a);
    fe_sub(f, d, c);
    fe_add(g, d, c);
    fe_add(h, b, a);
    fe_mul(r->X, e, f);
    fe_mul(r->Y, g, h);
    fe_mul(r->T, e, h);
    fe_mul(r->Z, f, g);
}

/* r = p + q (q affine Niels), or p - q when neg */
static void ge_add_niels(ge *r, const ge *p, const ge_niels *q, int neg) {
    fe a, b, c, d, e, f, g, h, t;
    fe_sub(t, p->Y, p->X);
    fe_mul(a, t, neg ? q->ypx : q->ymx);
    fe_add(t, p->Y, p->X);
    fe_mul(b, t, neg ? q->ymx : q->ypx);
    fe_mul(c, p->T, q->t2d);
    if (neg) fe_neg(c, c);
    fe_add(d, p->Z, p->Z);
    fe_sub(e, b, a);
    fe_sub(f, d, c);
    fe_add(g, d, c);
    fe_add(h, b, a);
    fe_mul(r->X, e, f);
    fe_mul(r->Y, g, h);
    fe_mul(r->T, e, h);
    fe_mul(r->Z, f, g);
}

static void ge_add(ge *r, const ge *p, const ge *q) {
    ge_cached c;
    ge_to_cached(&c, q);
    ge_add_cached(r, p, &c, 0);
}

/* dbl-2008-hwcd with a = -1 */
static void ge_dbl(ge *r, const ge *p) {
    fe a, b, c, e, f, g, h, t;
    fe_sq(a, p->X);
    fe_sq(b, p->Y);
    fe_sq(c, p->Z);
    fe_add(c, c, c);
    fe_add(t, p->X, p->Y);
    fe_sq(e, t);
    fe_sub(e, e, a);
    fe_sub(e, e, b);          /* E = 2XY */
    fe_sub(g, b, a);          /* G = -A + B */
    fe_sub(f, g, c);          /* F = G - C */
    fe_add(h, a, b);
    fe_neg(h, h);             /* H = -A - B */
    fe_mul(r->X, e, f);
    fe_mul(r->Y, g, h);
    fe_mul(r->T, e, h);
    fe_mul(r->Z, f, g);
}

static void niels_to_ge(ge *r, const ge_niels *q) {  /* x = (ypx - ymx)/2, y = (ypx + ymx)/2 */
    ge_identity(r);
    ge_add_niels(r, r, q, 0);
}

/* RFC 9496 4.3.1.  Returns 0 and the point in Niels form, or -1. */
static int ristretto_decode(ge_niels *out, const uint8_t in[32], int allow_identity) {
    fe s, ss, u1, u2, u2sq, v, t, inv, denx, deny, x, y;
    uint8_t back[32];
    fe_frombytes(s, in);
    fe_tobytes(back, s);
    if (memcmp(back, in, 32) != 0) return -1;   /* non-canonical (>= p or top bit set) */
    if (in[0] & 1) return -1;                   /* negative s */
    fe_sq(ss, s);
    fe_1(t);
    fe_sub(u1, t, ss);
    fe_add(u2, t, ss);
    fe_sq(u2sq, u2);
    fe_sq(v, u1);
    fe_mul(v, v, C_D);
    fe_neg(v, v);
    fe_sub(v, v, u2sq);                         /* v = -(D u1^2) - u2^2 */
    fe_mul(t, v, u2sq);
    fe one; fe_1(one);
    int was_square = fe_sqrt_ratio_m1(inv, one, t);
    fe_mul(denx, inv, u2);
    fe_mul(deny, inv, denx);
    fe_mul(deny, deny, v);
    fe_add(x, s, s);
    fe_mul(x, x, denx);
    fe_abs(x, x);
    fe_mul(y, u1, deny);
    fe_mul(t, x, y);
    if (!was_square || fe_isneg(t) || fe_iszero(y)) return -1;
    if (!allow_identity && fe_iszero(x)) return -1;  /* (0, 1) is the only decode with x = 0 */
    fe_add(out->ypx, y, x);
    fe_carry(out->ypx);
    fe_sub(out->ymx, y, x);
    fe_mul(out->t2d, t, C_D2);
    return 0;
}

/* RFC 9496 4.3.2 */
static void ristretto_encode(uint8_t out[32], const ge *p) {
    fe u1, u2, t, inv, den1, den2, zinv, ix, iy, ench, x, y, deninv, s;
    fe_add(t, p->Z, p->Y);
    fe_sub(u1, p->Z, p->Y);
    fe_mul(u1, t, u1);
    fe_mul(u2, p->X, p->Y);
    fe_sq(t, u2);
    fe_mul(t, t, u1);
    fe one; fe_1(one);
    fe_sqrt_ratio_m1(inv, one, t);
    fe_mul(den1, inv, u1);
    fe_mul(den2, inv, u2);
    fe_mul(zinv, den1, den2);
    fe_mul(zinv, zinv, p->T);
    fe_mul(ix, p->X, C_SQRT_M1);
    fe_mul(iy, p->Y, C_SQRT_M1);
    fe_mul(ench, den1, C_INVSQRT_A_MINUS_D);
    fe_mul(t, p->T, zinv);
    uint64_t rotate = (uint64_t)fe_isneg(t);
    fe_copy(x, p->X); fe_copy(y, p->Y); fe_copy(deninv, den2);
    fe_cmov(x, iy, rotate);
    fe_cmov(y, ix, rotate);
    fe_cmov(deninv, ench, rotate);
    fe_mul(t, x, zinv);
    fe_neg(ix, y);
    fe_cmov(y, ix, (uint64_t)fe_isneg(t));
    fe_sub(t, p->Z, y);
    fe_mul(s, deninv, t);
    fe_abs(s, s);
    fe_tobytes(out, s);
}

/* ---------------------------------------------------------------- MSM */

/* signed radix-2^c digits of a scalar < 2^253: nwin digits in [-2^(c-1), 2^(c-1)) */
static void signed_digits(int32_t *dig, const uint8_t sc[32], int c, int nwin) {
    int carry = 0;
    for (int w = 0; w < nwin; w++) {
        int bit = w * c, v = 0;
        for (int k = 0; k < c && bit + k < 256; k++)
            v |= ((sc[(bit + k) >> 3] >> ((bit + k) & 7)) & 1) << k;
        v += carry;
        if (v >= (1 << (c - 1))) { v -= (1 << c); carry = 1; } else carry = 0;
        dig[w] = v;
    }
}

static void msm_straus(ge *acc, const uint8_t *sc, const ge_niels *pts, Py_ssize_t n) {
    const int c = 4, nwin = 64;                  /* 253 bits + carry fit in 64 windows of 4 */
    ge_cached *tab = malloc(sizeof(ge_cached) * 8 * (size_t)(n ? n : 1));
    int32_t *dig = malloc(sizeof(int32_t) * nwin * (size_t)(n ? n : 1));
    for (Py_ssize_t i = 0; i < n; i++) {
        ge p, q;
        niels_to_ge(&p, &pts[i]);
        q = p;
        ge_to_cached(&tab[8 * i], &p);
        for (int k = 1; k < 8; k++) {            /* (k+1) P */
            ge_add_cached(&q, &q, &tab[8 * i], 0);
            ge_to_cached(&tab[8 * i + k], &q);
        }
        signed_digits(&dig[nwin * i], sc + 32 * i, c, nwin);
    }
    ge_identity(acc);
    for (int w = nwin - 1; w >= 0; w--) {
        for (int k = 0; k < c; k++) ge_dbl(acc, acc);
        for (Py_ssize_t i = 0; i < n; i++) {
            int d = dig[nwin * i + w];
            if (d > 0) ge_add_cached(acc, acc, &tab[8 * i + d - 1], 0);
            else if (d < 0) ge_add_cached(acc, acc, &tab[8 * i - d - 1], 1);
        }
    }
    free(tab);
    free(dig);
}

static int pippenger_window(Py_ssize_t n) {
    int best = 4;
    double best_cost = 1e300;
    for (int c = 4; c <= 16; c++) {
        int nwin = (253 + c - 1) / c + 1;
        double cost = (double)nwin * ((double)n * 7.0 + (double)(1 << (c - 1)) * 2.0 * 9.0 + c * 8.0);
        if (cost < best_cost) { best_cost = cost; best = c; }
    }
    return best;
}

static int msm_pippenger(ge *acc, const uint8_t *sc, const ge_niels *pts, Py_ssize_t n) {
    int c = pippenger_window(n);
    int nwin = (253 + c - 1) / c + 1;
    int nb = 1 << (c - 1);
    int32_t *dig = malloc(sizeof(int32_t) * (size_t)nwin * (size_t)n);
    ge *buckets = malloc(sizeof(ge) * (size_t)nb);
    if (!dig || !buckets) { free(dig); free(buckets); return -1; }
    for (Py_ssize_t i = 0; i < n; i++) signed_digits(&dig[(size_t)nwin * i], sc + 32 * i, c, nwin);
    ge_identity(acc);
    for (int w = nwin - 1; w >= 0; w--) {
        for (int k = 0; k < c; k++) ge_dbl(acc, acc);
        for (int b = 0; b < nb; b++) ge_identity(&buckets[b]);
        for (Py_ssize_t i = 0; i < n; i++) {
            int d = dig[(size_t)nwin * i + w];
            if (d > 0) ge_add_niels(&buckets[d - 1], &buckets[d - 1], &pts[i], 0);
            else if (d < 0) ge_add_niels(&buckets[-d - 1], &buckets[-d - 1], &pts[i], 1);
        }
        ge run, tot;
        ge_identity(&run);
        ge_identity(&tot);
        for (int b = nb - 1; b >= 0; b--) {
            ge_add(&run, &run, &buckets[b]);
            ge_add(&tot, &tot, &run);
        }
        ge_add(acc, acc, &tot);
    }
    free(dig);
    free(buckets);
    return 0;
}


/* ---------------------------------------------------------------- constant-time fixed base
 * For SECRET scalars (the prover).  A table of a public base B holds j * 16^i * B (j = 1..8,
 * i = 0..63) in affine Niels form; s * B = sum_i T[i][d_i] for the signed radix-16 digits
 * d_i in [-8, 8) of s.  Digit recoding, table lookup (every entry read, selected by masks),
 * conditional negation, the additions and the final encoding are branch-free and their
 * memory accesses do not depend on s. */

static void fe_invert(fe out, const fe z) {   /* z^(p-2) = (z^(2^252-3))^8 * z^3 */
    fe t, z3;
    fe_pow22523(t, z);
    fe_sqn(t, t, 3);
    fe_sq(z3, z);
    fe_mul(z3, z3, z);
    fe_mul(out, t, z3);
}

static void ge_to_niels(ge_niels *n, const ge *p) {  /* public points only (variable time ok) */
    fe zi, x, y, t;
    fe_invert(zi, p->Z);
    fe_mul(x, p->X, zi);
    fe_mul(y, p->Y, zi);
    fe_add(n->ypx, y, x);
    fe_carry(n->ypx);
    fe_sub(n->ymx, y, x);
    fe_mul(t, x, y);
    fe_mul(n->t2d, t, C_D2);
}

#define CT_ROWS 64
#define CT_COLS 8

static void ct_build_table(ge_niels *tab, const ge_niels *base) {
    ge row, q;
    niels_to_ge(&row, base);                      /* 16^i * B */
    for (int i = 0; i < CT_ROWS; i++) {
        ge_cached c;
        ge_to_cached(&c, &row);
        q = row;
        ge_to_niels(&tab[CT_COLS * i], &q);
        for (int j = 1; j < CT_COLS; j++) {
            ge_add_cached(&q, &q, &c, 0);
            ge_to_niels(&tab[CT_COLS * i + j], &q);
        }
        for (int k = 0; k < 4; k++) ge_dbl(&row, &row);
    }
}

static void ct_digits(int8_t e[64], const uint8_t s[32]) {
    for (int i = 0; i < 32; i++) {
        e[2 * i] = (int8_t)(s[i] & 15);
        e[2 * i + 1] = (int8_t)((s[i] >> 4) & 15);
    }
    int8_t carry = 0;
    for (int i = 0; i < 63; i++) {
        e[i] = (int8_t)(e[i] + carry);
        carry = (int8_t)((e[i] + 8) >> 4);
        e[i] = (int8_t)(e[i] - (carry << 4));
    }
    e[63] = (int8_t)(e[63] + carry);              /* s < 2^253: e[63] <= 2 */
}

static void ct_select(ge_niels *out, const ge_niels *row, int8_t d) {
    uint64_t neg = (uint64_t)((uint8_t)d >> 7);   /* 1 iff d < 0 */
    uint64_t a = (uint64_t)(int64_t)d;
    uint64_t mag = (a ^ ((uint64_t)0 - neg)) + neg;   /* |d| */
    fe_1(out->ypx); fe_1(out->ymx); fe_0(out->t2d);   /* identity */
    for (int j = 0; j < CT_COLS; j++) {
        uint64_t x = mag ^ (uint64_t)(j + 1);
        uint64_t eq = ((x | ((uint64_t)0 - x)) >> 63) ^ 1;    /* 1 iff mag == j + 1 */
        fe_cmov(out->ypx, row[j].ypx, eq);
        fe_cmov(out->ymx, row[j].ymx, eq);
        fe_cmov(out->t2d, row[j].t2d, eq);
    }
    fe t, nt;
    fe_copy(t, out->ypx);
    fe_cmov(out->ypx, out->ymx, neg);
    fe_cmov(out->ymx, t, neg);
    fe_neg(nt, out->t2d);
    fe_cmov(out->t2d, nt, neg);
}

static void ct_mul_add(ge *acc, const ge_niels *tab, const uint8_t s[32]) {  /* acc += s B */
    int8_t e[64];
    ge_niels sel;
    ct_digits(e, s);
    for (int i = 0; i < CT_ROWS; i++) {
        ct_select(&sel, &tab[CT_COLS * i], e[i]);
        ge_add_niels(acc, acc, &sel, 0);
    }
}

static PyObject *py_ct_table(PyObject *self, PyObject *args) {
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    ge_niels base;
    if (buf.len != 32 || ristretto_decode(&base, buf.buf, 0) != 0) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "ct_table: base must be a valid non-identity element");
        return NULL;
    }
    PyBuffer_Release(&buf);
    PyObject *out = PyBytes_FromStringAndSize(NULL, CT_ROWS * CT_COLS * (Py_ssize_t)sizeof(ge_niels));
    if (!out) return NULL;
    ct_build_table((ge_niels *)PyBytes_AS_STRING(out), &base);
    return out;
}

/* ct_mul(tables, scalar_blobs, addends) -> n encodings of sum_k s_k[i] B_k (+ A[i]) */
static PyObject *py_ct_mul(PyObject *self, PyObject *args) {
    PyObject *tables, *blobs, *addends;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyTuple_Type, &tables, &PyTuple_Type, &blobs, &addends))
        return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(tables), n = -1;
    const Py_ssize_t tsize = CT_ROWS * CT_COLS * (Py_ssize_t)sizeof(ge_niels);
    if (k < 1 || PyTuple_GET_SIZE(blobs) != k) {
        PyErr_SetString(PyExc_ValueError, "ct_mul: one scalar blob per table");
        return NULL;
    }
    const ge_niels *tp[8];
    const uint8_t *sp[8];
    if (k > 8) { PyErr_SetString(PyExc_ValueError, "ct_mul: at most 8 bases"); return NULL; }
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *t = PyTuple_GET_ITEM(tables, j), *b = PyTuple_GET_ITEM(blobs, j);
        if (!PyBytes_Check(t) || PyBytes_GET_SIZE(t) != tsize || !PyBytes_Check(b)
            || PyBytes_GET_SIZE(b) % 32 || (n >= 0 && PyBytes_GET_SIZE(b) != 32 * n)) {
            PyErr_SetString(PyExc_ValueError, "ct_mul: bad table or scalar blob");
            return NULL;
        }
        n = PyBytes_GET_SIZE(b) / 32;
        tp[j] = (const ge_niels *)PyBytes_AS_STRING(t);
        sp[j] = (const uint8_t *)PyBytes_AS_STRING(b);
        for (Py_ssize_t i = 0; i < n; i++)
            if (sp[j][32 * i + 31] >= 0x20) {
                PyErr_SetString(PyExc_ValueError, "ct_mul: scalar >= 2^253");
                return NULL;
            }
    }
    const ge_niels *add = NULL;
    if (addends != Py_None) {
        if (!PyBytes_Check(addends) || PyBytes_GET_SIZE(addends) != n * (Py_ssize_t)sizeof(ge_niels)) {
            PyErr_SetString(PyExc_ValueError, "ct_mul: addends must be a decoded table of n points");
            return NULL;
        }
        add = (const ge_niels *)PyBytes_AS_STRING(addends);
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, 32 * n);
    if (!out) return NULL;
    uint8_t *o = (uint8_t *)PyBytes_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        ge acc;
        if (add) niels_to_ge(&acc, &add[i]); else ge_identity(&acc);
        for (Py_ssize_t j = 0; j < k; j++) ct_mul_add(&acc, tp[j], sp[j] + 32 * i);
        ristretto_encode(o + 32 * i, &acc);
    }
    Py_END_ALLOW_THREADS
    return out;
}

/* Constant-time Straus MSM for secret scalars over public points: every point adds one
 * masked-selected multiple (identity for digit 0) in each of the 64 radix-16 windows. */
static void ct_select_cached(ge_cached *out, const ge_cached *row, int8_t d) {
    uint64_t neg = (uint64_t)((uint8_t)d >> 7);
    uint64_t a = (uint64_t)(int64_t)d;
    uint64_t mag = (a ^ ((uint64_t)0 - neg)) + neg;
    fe_1(out->ypx); fe_1(out->ymx); fe_1(out->Z); fe_0(out->t2d);
    for (int j = 0; j < 8; j++) {
        uint64_t x = mag ^ (uint64_t)(j + 1);
        uint64_t eq = ((x | ((uint64_t)0 - x)) >> 63) ^ 1;
        fe_cmov(out->ypx, row[j].ypx, eq);
        fe_cmov(out->ymx, row[j].ymx, eq);
        fe_cmov(out->Z, row[j].Z, eq);
        fe_cmov(out->t2d, row[j].t2d, eq);
    }
    fe t, nt;
    fe_copy(t, out->ypx);
    fe_cmov(out->ypx, out->ymx, neg);
    fe_cmov(out->ymx, t, neg);
    fe_neg(nt, out->t2d);
    fe_cmov(out->t2d, nt, neg);
}

#define CT_CHUNK 256

static int ct_msm(ge *total, const uint8_t *sc, const ge_niels *pts, Py_ssize_t n) {
    ge_cached *tab = malloc(sizeof(ge_cached) * 8 * CT_CHUNK);
    int8_t *dig = malloc(64 * CT_CHUNK);
    if (!tab || !dig) { free(tab); free(dig); return -1; }
    ge_identity(total);
    for (Py_ssize_t c0 = 0; c0 < n; c0 += CT_CHUNK) {
        Py_ssize_t m = n - c0 < CT_CHUNK ? n - c0 : CT_CHUNK;
        for (Py_ssize_t i = 0; i < m; i++) {
            ge p, q;
            niels_to_ge(&p, &pts[c0 + i]);
            q = p;
            ge_to_cached(&tab[8 * i], &p);
            for (int k = 1; k < 8; k++) {
                ge_add_cached(&q, &q, &tab[8 * i], 0);
                ge_to_cached(&tab[8 * i + k], &q);
            }
            ct_digits(&dig[64 * i], sc + 32 * (c0 + i));
        }
        ge acc;
        ge_identity(&acc);
        for (int w = 63; w >= 0; w--) {
            for (int k = 0; k < 4; k++) ge_dbl(&acc, &acc);
            for (Py_ssize_t i = 0; i < m; i++) {
                ge_cached sel;
                ct_select_cached(&sel, &tab[8 * i], dig[64 * i + w]);
                ge_add_cached(&acc, &acc, &sel, 0);
            }
        }
        ge_add(total, total, &acc);
    }
    memset(dig, 0, 64 * CT_CHUNK);
    free(tab);
    free(dig);
    return 0;
}

static PyObject *py_ct_msm(PyObject *self, PyObject *args) {
    Py_buffer sb, pb;
    if (!PyArg_ParseTuple(args, "y*y*", &sb, &pb)) return NULL;
    Py_ssize_t n = sb.len / 32;
    const char *err = NULL;
    if (sb.len % 32 || pb.len != n * (Py_ssize_t)sizeof(ge_niels))
        err = "ct_msm: scalar and point counts differ";
    else
        for (Py_ssize_t i = 0; i < n; i++)
            if (((const uint8_t *)sb.buf)[32 * i + 31] >= 0x20) { err = "ct_msm: scalar >= 2^253"; break; }
    if (err) {
        PyBuffer_Release(&sb);
        PyBuffer_Release(&pb);
        PyErr_SetString(PyExc_ValueError, err);
        return NULL;
    }
    uint8_t res[32];
    int rc;
    Py_BEGIN_ALLOW_THREADS
    ge acc;
    rc = ct_msm(&acc, sb.buf, pb.buf, n);
    if (rc == 0) ristretto_encode(res, &acc);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&sb);
    PyBuffer_Release(&pb);
    if (rc) return PyErr_NoMemory();
    return PyBytes_FromStringAndSize((const char *)res, 32);
}

/* ---------------------------------------------------------------- Python */

static PyObject *py_decode(PyObject *self, PyObject *args) {
    Py_buffer buf;
    int allow_identity;
    if (!PyArg_ParseTuple(args, "y*p", &buf, &allow_identity)) return NULL;
    if (buf.len % 32) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "decode: length is not a multiple of 32");
        return NULL;
    }
    Py_ssize_t n = buf.len / 32, bad = -1;
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(ge_niels));
    if (!out) { PyBuffer_Release(&buf); return NULL; }
    ge_niels *pts = (ge_niels *)PyBytes_AS_STRING(out);
    const uint8_t *in = buf.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        if (ristretto_decode(&pts[i], in + 32 * i, allow_identity) != 0) { bad = i; break; }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    if (bad >= 0) { Py_DECREF(out); return PyLong_FromSsize_t(bad); }
    return out;
}

static PyObject *py_encode(PyObject *self, PyObject *args) {
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    if (buf.len % sizeof(ge_niels)) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "encode: not a decoded point table");
        return NULL;
    }
    Py_ssize_t n = buf.len / (Py_ssize_t)sizeof(ge_niels);
    PyObject *out = PyBytes_FromStringAndSize(NULL, 32 * n);
    if (!out) { PyBuffer_Release(&buf); return NULL; }
    uint8_t *o = (uint8_t *)PyBytes_AS_STRING(out);
    const ge_niels *pts = buf.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        ge p;
        niels_to_ge(&p, &pts[i]);
        ristretto_encode(o + 32 * i, &p);
    }
    PyBuffer_Release(&buf);
    return out;
}

static PyObject *py_msm(PyObject *self, PyObject *args) {
    Py_buffer sb, pb;
    if (!PyArg_ParseTuple(args, "y*y*", &sb, &pb)) return NULL;
    Py_ssize_t n = sb.len / 32;
    const char *err = NULL;
    if (sb.len % 32 || pb.len != n * (Py_ssize_t)sizeof(ge_niels))
        err = "msm: scalar and point counts differ";
    else
        for (Py_ssize_t i = 0; i < n; i++)
            if (((const uint8_t *)sb.buf)[32 * i + 31] >= 0x20) { err = "msm: scalar >= 2^253"; break; }
    if (err) {
        PyBuffer_Release(&sb);
        PyBuffer_Release(&pb);
        PyErr_SetString(PyExc_ValueError, err);
        return NULL;
    }
    uint8_t res[32];
    int rc = 0;
    Py_BEGIN_ALLOW_THREADS
    ge acc;
    if (n < 48) msm_straus(&acc, sb.buf, pb.buf, n);
    else rc = msm_pippenger(&acc, sb.buf, pb.buf, n);
    if (rc == 0) ristretto_encode(res, &acc);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&sb);
    PyBuffer_Release(&pb);
    if (rc) return PyErr_NoMemory();
    return PyBytes_FromStringAndSize((const char *)res, 32);
}

static PyMethodDef methods[] = {
    {"decode", py_decode, METH_VARARGS, "decode(blob, allow_identity) -> point table | bad index"},
    {"encode", py_encode, METH_VARARGS, "encode(table) -> concatenated encodings"},
    {"msm", py_msm, METH_VARARGS, "msm(scalars, table) -> encoding of sum s_i P_i"},
    {"ct_msm", py_ct_msm, METH_VARARGS, "ct_msm(scalars, table) -> sum s_i P_i, constant time in s"},
    {"ct_table", py_ct_table, METH_VARARGS, "ct_table(base) -> constant-time fixed-base table"},
    {"ct_mul", py_ct_mul, METH_VARARGS, "ct_mul(tables, scalar_blobs, addends|None) -> encodings"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_ristretto",
                                    "Native ristretto255 (variable time; public scalars only).", -1, methods};

PyMODINIT_FUNC PyInit__ristretto(void) {
    fe_frombytes(C_D, B_D);
    fe_frombytes(C_D2, B_D2);
    fe_frombytes(C_SQRT_M1, B_SQRT_M1);
    fe_frombytes(C_INVSQRT_A_MINUS_D, B_INVSQRT_A_MINUS_D);
    PyObject *m = PyModule_Create(&moddef);
    if (m) PyModule_AddIntConstant(m, "POINT_SIZE", (long)sizeof(ge_niels));
    return m;
}
