"""How guessable a passphrase is (zxcvbn), and the minimum the KMA accepts.

One rule for every passphrase a person chooses: a key split member's (set-up, a key split
change's enrolment) and a user's (the first Security Officer at set-up, a new user, a passphrase
set anew). Each is refused below the minimum with zxcvbn's own warning as the reason; the manager
shows the same measure as a meter while it is typed (app/setup.py `strength`).
"""

from __future__ import annotations

from collections.abc import Sequence

from kma.errors import ValidationFailed

# zxcvbn's scale: 3 is "safely unguessable: moderate protection from offline slow-hash scenario".
# A member's sealed share and a user's passphrase hash are exactly that scenario (Argon2id
# against a copy of the database).
MIN_STRENGTH = 3
STRENGTH_WORDS = (
    "too guessable",
    "very guessable",
    "somewhat guessable",
    "safely unguessable",
    "very unguessable",
)


def check_strength(passphrase: str, what: str, user_inputs: Sequence[str] = ()) -> None:
    """Refuse a passphrase zxcvbn finds guessable, with its own warning as the reason."""
    from zxcvbn import zxcvbn

    result = zxcvbn(passphrase[:100], user_inputs=list(user_inputs))
    if result["score"] < MIN_STRENGTH:
        feedback = result["feedback"]
        hint = feedback.get("warning") or " ".join(feedback.get("suggestions", [])) or ""
        raise ValidationFailed(
            f"{what} is {STRENGTH_WORDS[result['score']]}"
            + (f": {hint.rstrip('.')}." if hint else ".")
            + " Choose a longer one, e.g. a few unrelated words."
        )


def check_user_passphrase(
    passphrase: str, user_id: str, name: str = "", what: str = "The passphrase"
) -> None:
    """A user's passphrase: 8 to 256 characters, and not guessable (the user's own ID and name
    count as guessable words)."""
    from kma.domain.validation import check_passphrase

    check_passphrase(passphrase, what)
    check_strength(passphrase, what, [w for w in (user_id, name) if w])
