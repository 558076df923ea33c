"""The two Stapeldammen variants as data: setup, first player, result rule, ply cap."""

from __future__ import annotations

import dataclasses

WHITE, BLACK = 0, 1


@dataclasses.dataclass(frozen=True)
class Variant:
    """Everything that differs between variants; the engine reads only this.

    Attributes:
        name: short name used in configs and PDN tags ("I" or "II").
        setup: position text (RULES.md format) of the start position; it also
            fixes the first player.
        points_decide: False: the side to move without a legal move loses
            (Variant I). True: when the side to move has no legal move the
            game ends and back-row points decide, equal points draw (Variant II).
        ply_cap: a game still running after this many full moves (plies) is
            reported as truncated, never as a win.
    """

    name: str
    setup: str
    points_decide: bool
    ply_cap: int = 600

    def with_ply_cap(self, ply_cap: int) -> "Variant":
        """This variant with another ply cap."""
        if ply_cap < 1:
            raise ValueError(f"ply_cap must be a positive number of plies, got {ply_cap}")
        return dataclasses.replace(self, ply_cap=int(ply_cap))


VARIANT_I = Variant(
    name="I",
    setup="W:" + ",".join(["b"] * 20 + [""] * 10 + ["w"] * 20),
    points_decide=False,
)
VARIANT_II = Variant(
    name="II",
    setup="B:" + ",".join(["bb"] * 10 + [""] * 30 + ["ww"] * 10),
    points_decide=True,
)
VARIANTS = {"I": VARIANT_I, "II": VARIANT_II}


def get_variant(variant: "Variant | str") -> Variant:
    """A :class:`Variant` from itself or its name ("I", "II"; "1", "2" accepted)."""
    if isinstance(variant, Variant):
        return variant
    key = {"1": "I", "2": "II"}.get(str(variant).strip(), str(variant).strip().upper())
    if key not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}: expected one of {sorted(VARIANTS)}")
    return VARIANTS[key]
