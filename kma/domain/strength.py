"""How guessable a key split member's passphrase is (zxcvbn), and the minimum the KMA accepts.

The set-up (kma/setup) and a key split change's enrolment (kma/services/quorum) both refuse a
member's passphrase below the minimum, with zxcvbn's own warning as the reason; the manager shows
the same measure as a meter while the member types.
"""

from __future__ import annotations

from collections.abc import Sequence

from kma.errors import ValidationFailed

# zxcvbn's scale: 3 is "safely unguessable: moderate protection from offline slow-hash scenario".
# A member's sealed share is exactly that scenario (Argon2id against a copy of the database).
MIN_STRENGTH = 3
STRENGTH_WORDS = ("too guessable", "very guessable", "somewhat guessable", "safely unguessable",
                  "very unguessable")  # fmt: skip


def check_strength(passphrase: str, what: str, user_inputs: Sequence[str] = ()) -> None:
    """Refuse a passphrase zxcvbn finds guessable, with its own warning as the reason."""
    from zxcvbn import zxcvbn

    result = zxcvbn(passphrase[:100], user_inputs=list(user_inputs))
    if result["score"] < MIN_STRENGTH:
        feedback = result["feedback"]
        hint = feedback.get("warning") or " ".join(feedback.get("suggestions", [])) or ""
        raise ValidationFailed(f"{what} is {STRENGTH_WORDS[result['score']]}"
                               + (f": {hint.rstrip('.')}." if hint else ".")
                               + " Choose a longer one, e.g. a few unrelated words.")  # fmt: skip
