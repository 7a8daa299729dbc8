"""BS.1534 post-screening: which listeners' MUSHRA ratings are left out of the pooled result.

The rule (ITU-R BS.1534-3, 4.1.2, as the issue words it): a listener is **excluded** who

- rates the hidden reference below :data:`REFERENCE_MIN` (90) in more than :data:`MAX_SHARE` (15 %)
  of the items they rated, or
- rates the 3.5 kHz low-pass anchor above the hidden reference in more than 15 % of those items
  (the anchor is audibly worse than the original: rating it higher means the listener did not hear,
  or did not take care).

Only complete screens count (every condition rated); a listener with none is not screened (and not
pooled). The owner can include the excluded listeners again (``include_excluded``): the rule is
shown with the result either way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from core.listening.mushra import HIDDEN_REFERENCE, LOW_ANCHOR

REFERENCE_MIN = 90  # the hidden reference rated below this counts against the listener
MAX_SHARE = 0.15  # more than this share of items against a listener: excluded
RULE = (
    f"Excluded: a listener who rates the hidden reference below {REFERENCE_MIN} in more than "
    f"{MAX_SHARE:.0%} of the items, or the 3.5 kHz anchor above the hidden reference in more than "
    f"{MAX_SHARE:.0%} of the items (ITU-R BS.1534-3 post-screening)."
)


@dataclass(frozen=True)
class Screened:
    listener: str
    items: int  # complete screens
    reference_low: int  # items where the hidden reference was rated below REFERENCE_MIN
    anchor_above: int  # items where the 3.5 kHz anchor was rated above the hidden reference
    excluded: bool
    reason: str  # "" when kept; "reference" or "anchor" (both: "reference,anchor")

    def to_dict(self) -> dict:
        return asdict(self)


def complete_screens(ratings: dict[int, dict[str, int]], conditions) -> dict[int, dict[str, int]]:
    """The screens (item -> {condition: rating}) on which every condition is rated."""
    need = set(conditions)
    return {item: got for item, got in ratings.items() if need <= set(got)}


def screen(listener: str, ratings: dict[int, dict[str, int]], conditions) -> Screened:
    """Apply the rule to one listener's ratings (item -> {condition id: rating})."""
    complete = complete_screens(ratings, conditions)
    n = len(complete)
    low = sum(1 for got in complete.values() if got[HIDDEN_REFERENCE] < REFERENCE_MIN)
    above = sum(1 for got in complete.values() if LOW_ANCHOR in got and got[LOW_ANCHOR] > got[HIDDEN_REFERENCE])
    reasons = [name for name, count in (("reference", low), ("anchor", above)) if n and count / n > MAX_SHARE]
    return Screened(listener, n, low, above, bool(reasons), ",".join(reasons))
