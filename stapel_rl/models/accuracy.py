"""How far a fast inference path strays from the network evaluated in fp32 as trained."""

from __future__ import annotations

import numpy as np

from stapel_rl.env.state import State
from stapel_rl.models.inference import NetworkEvaluator
from stapel_rl.models.network import PolicyValueNet


def policy_kl(reference_logits: np.ndarray, logits: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``KL(p_ref || p)`` ``[B]`` of the two masked-softmax policies over the legal actions ``bool [B, A]``."""

    def log_softmax(z: np.ndarray) -> np.ndarray:
        z = np.where(legal, z.astype(np.float64), -np.inf)
        z = z - z.max(axis=1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=1, keepdims=True))

    log_p, log_q = log_softmax(reference_logits), log_softmax(logits)
    difference = np.where(legal, log_p - np.where(legal, log_q, 0.0), 0.0)  # -inf - -inf would be NaN
    return (np.exp(log_p) * difference).sum(axis=1)


def compare(net: PolicyValueNet, state: State, precision: str = "auto") -> "dict[str, float]":
    """The fast path (batch norm folded, ``precision``) against ``net`` in fp32 with its layers as trained.

    ``state``'s games must be live (every one has a legal action). Returns
    ``max_dvalue``, ``mean_dvalue`` (absolute value differences), ``mean_kl``,
    ``max_kl`` (policy KL divergence, reference first) and ``same_argmax``
    (share of positions whose most likely move is the same).
    """
    legal = state.legal_action_mask
    if not legal.any(axis=1).all():
        raise ValueError("compare needs live positions: some have no legal action")
    reference = NetworkEvaluator(net, "cpu", precision="fp32", fold=False)(state)
    fast = NetworkEvaluator(net, "cpu", precision=precision)(state)
    dvalue = np.abs(fast.value.astype(np.float64) - reference.value)
    kl = policy_kl(reference.logits, fast.logits, legal)
    masked = lambda z: np.where(legal, z, -np.inf).argmax(axis=1)  # noqa: E731
    return {
        "max_dvalue": float(dvalue.max()),
        "mean_dvalue": float(dvalue.mean()),
        "mean_kl": float(kl.mean()),
        "max_kl": float(kl.max()),
        "same_argmax": float(np.mean(masked(fast.logits) == masked(reference.logits))),
    }
