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

#include "_ristretto_group.h"

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

typedef int (*msm_fn)(ge *acc, const uint8_t *sc, const ge_niels *pts, Py_ssize_t n);

/* variable time: Straus below 48 terms, Pippenger above */
static int msm_vartime(ge *acc, const uint8_t *sc, const ge_niels *pts, Py_ssize_t n) {
    if (n < 48) {
        msm_straus(acc, sc, pts, n);
        return 0;
    }
    return msm_pippenger(acc, sc, pts, n);
}

/* (scalars, table) -> encoding of sum s_i P_i by ``fn``; ``name`` for the errors */
static PyObject *run_msm(PyObject *args, const char *name, msm_fn fn) {
    Py_buffer sb, pb;
    if (!PyArg_ParseTuple(args, "y*y*", &sb, &pb)) return NULL;
    Py_ssize_t n = sb.len / 32;
    const char *err = NULL;
    if (sb.len % 32 || pb.len != n * (Py_ssize_t)sizeof(ge_niels))
        err = "scalar and point counts differ";
    else
        for (Py_ssize_t i = 0; i < n; i++)
            if (((const uint8_t *)sb.buf)[32 * i + 31] >= 0x20) { err = "scalar >= 2^253"; break; }
    if (err) {
        PyBuffer_Release(&sb);
        PyBuffer_Release(&pb);
        PyErr_Format(PyExc_ValueError, "%s: %s", name, err);
        return NULL;
    }
    uint8_t res[32];
    int rc;
    Py_BEGIN_ALLOW_THREADS
    ge acc;
    rc = fn(&acc, sb.buf, pb.buf, n);
    if (rc == 0) ristretto_encode(res, &acc);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&sb);
    PyBuffer_Release(&pb);
    if (rc) return PyErr_NoMemory();
    return PyBytes_FromStringAndSize((const char *)res, 32);
}

static PyObject *py_ct_msm(PyObject *self, PyObject *args) { return run_msm(args, "ct_msm", ct_msm); }

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

static PyObject *py_msm(PyObject *self, PyObject *args) { return run_msm(args, "msm", msm_vartime); }

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
