// Whether an imported KernelBench output's error bound follows the magnitude of its summed terms
// (import_common.hpp): the reference recomputed on the inputs' (and parameters') absolute values, as
// kqual's declared contracts do with magnitude = "abs_inputs". A GEMM or convolution whose terms cancel
// is only as exact as the terms are large, so a bound relative to |result| fails correct kernels
// (real solutions failed by 2-6x such a bound on values near 1e10). Only where forward sums (a product's contraction or a
// reduction) and every operator it runs keeps the reference on |inputs| a bound on the terms'
// magnitude: an exp (or another operator that grows faster than its argument) after the sum would
// make that reference astronomically larger than any error, and so admit anything.
#include <fmt/format.h>

#include <set>
#include <string>

#include "import_common.hpp"

namespace kqual::contract::detail {

namespace {

// ATen operators (overloads dropped) that sum terms: products contracted, or a reduction.
const std::set<std::string>& summing() {
  static const std::set<std::string> s = {
      "convolution", "_convolution", "convolution_overrideable", "cudnn_convolution", "mkldnn_convolution", "conv1d", "conv2d", "conv3d",
      "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "einsum", "mv",
      "addmv", "dot", "vdot", "tensordot", "sum", "mean", "cumsum", "var", "std", "var_mean", "std_mean", "norm", "linalg_vector_norm",
      "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training", "native_layer_norm", "native_group_norm",
      "avg_pool1d", "avg_pool2d", "avg_pool3d", "_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_avg_pool1d", "logsumexp",
      "_softmax", "_log_softmax", "prod"};
  return s;
}

// Operators through which the reference on |inputs| still bounds the magnitude of what was summed
// before them: linear maps, bounded or at most linearly growing functions, selections, and moving data.
const std::set<std::string>& keeping() {
  static const std::set<std::string> s = {
      "add", "sub", "rsub", "mul", "div", "neg", "abs", "relu", "relu6", "clamp", "clamp_min", "clamp_max", "hardtanh", "leaky_relu",
      "gelu", "silu", "sigmoid", "tanh", "hardswish", "hardsigmoid", "mish", "softplus", "elu", "selu", "celu", "erf", "sqrt", "rsqrt",
      "reciprocal", "square", "max", "min", "amax", "amin", "maximum", "minimum", "max_pool1d", "max_pool2d", "max_pool3d",
      "max_pool2d_with_indices", "max_pool3d_with_indices", "adaptive_max_pool2d", "adaptive_max_pool3d", "where", "masked_fill",
      "dropout", "native_dropout", "view", "_unsafe_view", "reshape", "permute", "transpose", "t", "expand", "cat", "stack", "slice",
      "select", "squeeze", "unsqueeze", "flatten", "clone", "copy_", "copy", "contiguous", "as_strided", "detach", "alias", "lift_fresh",
      "empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "fill", "fill_", "full", "full_like", "split", "split_with_sizes",
      "chunk", "unbind", "narrow", "index_select", "gather", "pad", "constant_pad_nd", "_to_copy", "to", "type_as", "add_", "mul_",
      "div_", "sub_", "relu_", "clamp_", "hardtanh_", "sigmoid_", "tanh_", "pixel_shuffle", "channel_shuffle", "repeat", "roll", "flip",
      "upsample_nearest2d", "upsample_bilinear2d", "sign", "argmax", "argmin", "topk", "sort", "max_unpool2d", "addcmul", "lerp"};
  return s;
}

}  // namespace

MagnitudeBound magnitude_bound(const json& ops) {
  MagnitudeBound m;
  if (!ops.is_array() || ops.empty()) {
    m.why = "the capture lists no operators of forward (captured by an older kqual or PyTorch): the bound is relative to |ref|";
    return m;
  }
  std::string sums, outside;
  for (const auto& o : ops) {
    const std::string name = o.is_string() ? o.get<std::string>() : std::string();
    if (summing().count(name)) sums = sums.empty() ? name : sums;
    else if (!keeping().count(name) && outside.empty()) outside = name;
  }
  if (sums.empty()) {
    m.why = "forward sums nothing (no contraction or reduction among its operators): the bound is relative to |ref|";
  } else if (!outside.empty()) {
    m.why = fmt::format("forward sums ({}), but also runs {}, through which the reference on |inputs| is no bound on the terms' "
                        "magnitude: the bound is relative to |ref|",
                        sums, outside);
  } else {
    m.abs_inputs = true;
    m.why = fmt::format("forward sums ({}) and every operator it runs keeps the reference on |inputs| a bound on the summed terms: "
                        "rtol applies to the larger of |ref| and that reference (a sum that cancels is as exact as its terms are large)",
                        sums);
  }
  return m;
}

}  // namespace kqual::contract::detail
