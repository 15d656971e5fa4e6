# Trusted reference for contracts/masked_softmax: float64 NumPy, evaluated by kqual in its own process.
# mask arrives as NumPy bool_ (true = keep). Masked positions are -Inf before the max and 0 after, so
# what x holds there never reaches the row; a row whose max is -Inf (nothing kept, or only -Inf kept)
# is all zeros (FlashAttention-style); a NaN or +Inf kept makes the row's kept positions NaN.
import numpy as np


def masked_softmax(x, mask):
    xm = np.where(mask, x, -np.inf)
    m = np.max(xm, axis=1, keepdims=True)   # NaN when a kept logit is NaN
    empty = m == -np.inf
    e = np.where(mask, np.exp(xm - np.where(empty, 0.0, m)), 0.0)
    s = np.sum(e, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.where(mask, e / s, 0.0)
    return np.where(empty, 0.0, y)
