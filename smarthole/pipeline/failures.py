"""What a failed attempt means: when to try again, and the one sentence the user reads."""

from __future__ import annotations

import random
from typing import NamedTuple

from ..errors import TurnError


class Failure(NamedTuple):
    """A failed attempt: what went wrong and how many attempts the message has had."""

    error: TurnError
    attempts: int


def backoff_delay(
    attempts: int,
    retry_after: float | None,
    *,
    base: float,
    cap: float,
    rng: random.Random | None = None,
) -> float:
    """The server's requested delay if it sent one, else exponential with jitter; capped."""
    if retry_after is not None:
        return min(cap, retry_after)
    jitter = 1 + (rng or random).uniform(0, 0.25)
    return min(cap, base * 2 ** max(0, attempts - 1) * jitter)


def friendly_error(error: TurnError, message_id: str) -> str:
    """One sentence for the user; the details are in failed/ and ``smarthole status``."""
    retry = f"run `smarthole retry {message_id}` to try again"
    match error.kind:
        case "auth":
            return (
                "Sorry, the AI service rejected smarthole's API key, so I could not answer "
                f"this message; check ANTHROPIC_API_KEY, then {retry}."
            )
        case "spend_limit":
            return (
                "Sorry, the Anthropic account has reached its spend limit, so I could not "
                f"answer this message; once it is raised, {retry}."
            )
        case "prompt_too_long":
            return (
                "Sorry, this conversation has grown too long for the model, so I could not "
                "answer; start a new conversation and send it again."
            )
        case "team_request":
            return (
                f"Sorry, I could not start that team task: {error}. Fix the request (or the "
                f"[agents] tables of config.toml), then {retry}."
            )
        case "invalid_request":
            return (
                "Sorry, the AI service refused this request, so I could not answer this "
                f"message; {retry} after checking `smarthole status`."
            )
    return (
        "Sorry, I could not reach the AI service after several attempts, so this message "
        f"is still unanswered; {retry}."
    )
