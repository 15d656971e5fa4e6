// Softmax over the kept positions of each row (mask true = keep; bool, one byte), 0 at masked ones,
// in two passes over x with an online (max, sum) state:
//   pass 1: each thread folds the kept values of its slice into (m, s) = (running max, sum of
//           exp(x - m)), rescaling s by exp(m_old - m_new) when the max grows; states merge across
//           the warp with shuffles (and across warps through shared memory for long rows);
//   pass 2: y = mask ? exp(x - m) / s : 0.
// Rows of up to 1024 columns: one warp per row, 8 rows per 256-thread block; longer rows: one block
// per row. Columns go in groups of four: thread t owns groups t, t + 32 (or t + 256), ...; where the
// row of x (and y) starts on a 16-byte boundary and the mask's on a 4-byte one, a group is one float4
// and one 4-byte access, else four scalar ones. Every value is folded in the same order on both paths,
// so two runs placing rows at different alignments give the same bytes.
// Special values as the contract states: a NaN kept in a row poisons s (NaN row, masked positions 0);
// +Inf kept -> kept positions NaN (forced at the end); a row with nothing kept, or only -Inf kept,
// is all zeros (m stays -Inf). What x holds at a masked position is never folded.
// Known-broken variants are this file plus one define (candidates/masked_softmax/broken/*/kqual.toml):
//   KQUAL_BUG_IGNORE_MASK  softmax over the whole row, the mask never read
//   KQUAL_BUG_FILL_1E4     masked positions take the logit -1e4 instead of being left out (the fill of
//                          many attention kernels): right wherever a row keeps a finite logit, since
//                          exp(-1e4 - m) is 0 in f32; a fully masked row gives 1 / cols everywhere
//   KQUAL_BUG_NO_MAX       s = sum of exp(x) with no max subtracted: exp overflows past x ~ 88.7
//   KQUAL_BUG_INT_MASK     the mask read as 4-byte ints (a kernel written for an int32 mask): four
//                          bytes per position, and four times past the end of the bool tensor
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr long long kWarpRowMax = 1024;  // longest row handled by one warp

#ifdef KQUAL_BUG_INT_MASK
typedef int mask_t;
#else
typedef bool mask_t;
#endif
struct alignas(4 * sizeof(mask_t)) Mask4 {
  mask_t v[4];
};

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }
__device__ __forceinline__ float pos_inf() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ float qnan() { return __int_as_float(0x7fffffff); }

// What a position contributes to its row: its logit where kept, -Inf (nothing) where masked; and
// whether its output is 0 whatever the row's statistics are.
#if defined(KQUAL_BUG_IGNORE_MASK)
__device__ __forceinline__ float logit(float x, mask_t) { return x; }
__device__ __forceinline__ bool zeroed(mask_t) { return false; }
#elif defined(KQUAL_BUG_FILL_1E4)
__device__ __forceinline__ float logit(float x, mask_t k) { return k ? x : -1.0e4f; }
__device__ __forceinline__ bool zeroed(mask_t) { return false; }
#else
__device__ __forceinline__ float logit(float x, mask_t k) { return k ? x : neg_inf(); }
__device__ __forceinline__ bool zeroed(mask_t k) { return !k; }
#endif

// Fold one value into (m, s). -Inf contributes nothing (and must not form -Inf - -Inf); NaN poisons s.
__device__ __forceinline__ void fold(float& m, float& s, float v) {
#ifdef KQUAL_BUG_NO_MAX
  if (v != neg_inf()) {
    s += expf(v);
    m = 0.0f;  // only "something was kept"
  }
#else
  if (v > m) {
    s = s * expf(m - v) + 1.0f;  // m = -Inf at the start: exp(-Inf) = 0
    m = v;
  } else if (v != neg_inf()) {
    s += expf(v - m);
  }
#endif
}

// Merge state (m2, s2) into (m, s). Commutative bit for bit, so every lane of a butterfly agrees.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == neg_inf()) {
    s = s + s2;  // both empty (0), or NaN from a slice whose only kept values are NaN
  } else {
    s = s * expf(m - mn) + s2 * expf(m2 - mn);
  }
  m = mn;
}

__device__ __forceinline__ void warp_merge(float& m, float& s) {
#pragma unroll
  for (int off = 16; off >= 1; off /= 2) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, off);
    merge(m, s, m2, s2);
  }
}

__device__ __forceinline__ bool aligned(const void* p, unsigned long long a) {
  return (reinterpret_cast<unsigned long long>(p) & (a - 1)) == 0;
}

// Group g of a row: four values and their mask, as one float4 and one Mask4 where both are aligned,
// else element by element (n < 4 in the row's last, partial group).
__device__ __forceinline__ int load_group(const float* xr, const mask_t* mr, long long g, long long cols, bool vec, float (&x)[4],
                                          mask_t (&k)[4]) {
  const long long j = 4 * g;
  const int n = cols - j < 4 ? int(cols - j) : 4;
  if (vec && n == 4) {
    const float4 p = reinterpret_cast<const float4*>(xr)[g];
    const Mask4 q = *(reinterpret_cast<const Mask4*>(mr) + g);
    x[0] = p.x, x[1] = p.y, x[2] = p.z, x[3] = p.w;
#pragma unroll
    for (int e = 0; e < 4; ++e) k[e] = q.v[e];
    return 4;
  }
  for (int e = 0; e < n; ++e) {
    x[e] = xr[j + e];
    k[e] = mr[j + e];
  }
  return n;
}

__device__ __forceinline__ void row_state(const float* xr, const mask_t* mr, long long cols, int idx, int nthreads, float& m,
                                          float& s) {
  const bool vec = aligned(xr, 16) && aligned(mr, sizeof(Mask4));
  const long long groups = (cols + 3) / 4;
  for (long long g = idx; g < groups; g += nthreads) {
    float x[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    mask_t k[4] = {};
    const int n = load_group(xr, mr, g, cols, vec, x, k);
    for (int e = 0; e < n; ++e) fold(m, s, logit(x[e], k[e]));
  }
}

__device__ __forceinline__ void row_write(const float* xr, const mask_t* mr, float* yr, long long cols, int idx, int nthreads,
                                          float m, float inv) {
  const bool vec = aligned(xr, 16) && aligned(mr, sizeof(Mask4)) && aligned(yr, 16);
  const long long groups = (cols + 3) / 4;
  for (long long g = idx; g < groups; g += nthreads) {
    float x[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    mask_t k[4] = {};
    const int n = load_group(xr, mr, g, cols, vec, x, k);
    float o[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) o[e] = zeroed(k[e]) ? 0.0f : expf(logit(x[e], k[e]) - m) * inv;
    if (n == 4 && vec) {
      __stcs(reinterpret_cast<float4*>(yr) + g, make_float4(o[0], o[1], o[2], o[3]));  // written once: streaming store
    } else {
      for (int e = 0; e < n; ++e) yr[4 * g + e] = o[e];
    }
  }
}

// The row's final (m, 1 / s): a NaN row (NaN or +Inf kept) gets inv = NaN; a row with nothing kept
// (m = -Inf, s = 0) gets inv = 0 and m = 0, so kept -Inf logits give exp(-Inf) * 0 = 0.
__device__ __forceinline__ void finish(float& m, float& inv, float s) {
  if (s != s || m == pos_inf()) {
    inv = qnan();
  } else {
    inv = m == neg_inf() ? 0.0f : 1.0f / s;
  }
  if (m == neg_inf()) m = 0.0f;
}

}  // namespace

__global__ void __launch_bounds__(kThreads) masked_softmax(const float* x, const mask_t* __restrict__ mask, float* y, long long rows,
                                                           long long cols) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (cols <= kWarpRowMax) {
    const long long row = (long long)blockIdx.x * kWarps + warp;
    if (row >= rows) return;  // whole warp: no block-level barrier in this mode
    const float* xr = x + row * cols;
    const mask_t* mr = mask + row * cols;
    float m = neg_inf(), s = 0.0f, inv;
    row_state(xr, mr, cols, lane, 32, m, s);
    warp_merge(m, s);
    finish(m, inv, s);
    row_write(xr, mr, y + row * cols, cols, lane, 32, m, inv);
    return;
  }
  __shared__ float sm[kWarps], ss[kWarps];
  const long long row = blockIdx.x;
  const float* xr = x + row * cols;
  const mask_t* mr = mask + row * cols;
  float m = neg_inf(), s = 0.0f, inv;
  row_state(xr, mr, cols, threadIdx.x, kThreads, m, s);
  warp_merge(m, s);
  if (lane == 0) {
    sm[warp] = m;
    ss[warp] = s;
  }
  __syncthreads();
  m = sm[0];
  s = ss[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) merge(m, s, sm[w], ss[w]);  // same order in every thread
  finish(m, inv, s);
  row_write(xr, mr, y + row * cols, cols, threadIdx.x, kThreads, m, inv);
}
