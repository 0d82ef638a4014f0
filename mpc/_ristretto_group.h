/* ristretto255 field and group arithmetic for mpc/_ristretto.c (one translation unit; every
 * function is static).  Written for this project from RFC 9496 (sections 4.2-4.3) and the
 * extended twisted Edwards formulas of Hisil-Wong-Carter-Dawson 2008; see docs/native.md.
 * GF(2^255-19) in 5 limbs of 51 bits with 128-bit products; points in extended coordinates;
 * decoded inputs in affine Niels form (y+x, y-x, 2dxy). */
#ifndef SDP_RISTRETTO_GROUP_H
#define SDP_RISTRETTO_GROUP_H
#include <stdint.h>
#include <string.h>

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

/* the addition law's shared part: r from p and q's (y+x, y-x, 2dxy); qz: q's Z (NULL: 1) */
static void ge_add_with(ge *r, const ge *p, const fe ypx, const fe ymx, const fe t2d,
                        const fe *qz, int neg) {
    fe a, b, c, d, e, f, g, h, t;
    fe_sub(t, p->Y, p->X);
    fe_mul(a, t, neg ? ypx : ymx);
    fe_add(t, p->Y, p->X);
    fe_mul(b, t, neg ? ymx : ypx);
    fe_mul(c, p->T, t2d);
    if (neg) fe_neg(c, c);
    if (qz) fe_mul(d, p->Z, *qz);
    else fe_copy(d, p->Z);
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

/* r = p + q (q cached), or p - q when neg */
static void ge_add_cached(ge *r, const ge *p, const ge_cached *q, int neg) {
    ge_add_with(r, p, q->ypx, q->ymx, q->t2d, &q->Z, neg);
}

/* r = p + q (q affine Niels), or p - q when neg */
static void ge_add_niels(ge *r, const ge *p, const ge_niels *q, int neg) {
    ge_add_with(r, p, q->ypx, q->ymx, q->t2d, NULL, neg);
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

#endif
