"""What a failed attempt means: its count, and the one sentence the user reads."""

from __future__ import annotations

from typing import NamedTuple

from ..errors import TurnError


class Failure(NamedTuple):
    """A failed attempt: what went wrong and how many attempts the message has had."""

    error: TurnError
    attempts: int


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
        case "internal":
            return (
                "Sorry, smarthole hit an internal error and could not answer this message; "
                f"the details are in its log. After a fix, {retry}."
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
