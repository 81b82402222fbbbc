"""The budget: what each model call may cost before it is sent, and what it did cost.

Before a call, :meth:`CallMeter.reserve` computes a tight upper bound of its cost and stores it
as an open reservation, in one transaction with the check of every cap the call is held to
(``[budget]`` per conversation, task, day and month; a schedule run's own ``budget``). A call
that would pass a cap is not sent: the person is asked, through the approvals machinery
(``question = "budget"``), and the turn waits; approved, the cap goes up by ``raise_by`` and the
same call goes on; denied, unanswered or answered with a message, the turn ends with a reply
saying which cap was reached (:class:`CapReached`). The reply's transaction replaces the bound by
the real cost (:meth:`CallMeter.settle`).

The bound: a prompt token costs at most the dearest prompt rate (input, cache write or read),
an output token the output rate, and there are at most ``max_tokens`` of those. The prompt's
tokens are at most its bytes (every token stands for one byte or more of the text sent, whose
JSON framing more than covers the few tokens the API adds per message), plus a margin for the
API's own tool-use prompt; after a call answered in the same attempt, with nothing changed but
what was appended, they are at most that call's reported prompt tokens plus the bytes added.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..config.prices import PriceTable, as_dollars, dollars, micros
from ..db.spend import Cap, CapUse, Spend, SpendPlace, day_of
from ..db.states import CapKind
from ..errors import ConfigError, ModelError, SmartholeError

if TYPE_CHECKING:
    import sqlite3

    from ..config import Config
    from ..db.records import Conversation
    from .approvals import ApprovalGate
    from .client import ModelReply

logger = logging.getLogger(__name__)

BUDGET = "budget"  # an approval's ``question`` (and ``tool``) when a cap holds a call
PROMPT_MARGIN = 2048  # tokens the API may add to a prompt beyond its bytes (tool-use prompt)
APPENDED_MARGIN = 64  # the same, for what was appended after a call answered in this attempt
PROMPT_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
CAP_NAMES = {
    CapKind.CONVERSATION: "per-conversation",
    CapKind.TASK: "per-task",
    CapKind.SCHEDULE: "schedule run",
    CapKind.DAY: "daily",
    CapKind.MONTH: "monthly",
}


class CapReached(SmartholeError):
    """A call was held by a cap and the person did not raise it: the turn ends, saying so."""

    def __init__(self, reply: str, note: str) -> None:
        super().__init__(note)
        self.reply = reply
        self.note = note


def cap_amounts(config: Config) -> dict[Any, int]:
    """The caps of ``config`` in micro-dollars: by kind, and each schedule's by its name."""
    budget = config.budget
    amounts: dict[Any, int] = {kind: micros(getattr(budget, kind.value)) for kind in CONFIGURED}
    amounts.update({s.name: micros(s.budget) for s in config.schedules if s.budget})
    return amounts


def caps_for(amounts: dict[Any, int], place: SpendPlace, now: Any) -> list[Cap]:
    """Every cap a call at ``place`` is held to now (none when no amount is set)."""
    caps = [
        Cap(kind, key, amounts[kind])
        for kind, key in (
            (CapKind.CONVERSATION, place.conversation_id),
            (CapKind.TASK, place.task_id),
        )
        if key and amounts[kind]
    ]
    if place.schedule and place.message_id and amounts.get(place.schedule):
        caps.append(Cap(CapKind.SCHEDULE, place.message_id, amounts[place.schedule]))
    if amounts[CapKind.DAY] or amounts[CapKind.MONTH]:
        day = day_of(now)
        for kind, key in ((CapKind.DAY, day), (CapKind.MONTH, day[:7])):
            if amounts[kind]:
                caps.append(Cap(kind, key, amounts[kind]))
    return caps


CONFIGURED = (CapKind.CONVERSATION, CapKind.TASK, CapKind.DAY, CapKind.MONTH)


def unpriced_models(config: Config) -> list[str]:
    """The configured models with no known price (each refuses the start when a cap is set)."""
    table = PriceTable(config.prices)
    models = [config.model.name, *(a.model for a in config.agents.values() if a.model)]
    if config.titles.enabled:
        models.append(config.titles.model)
    return sorted({m for m in models if table.get(m) is None})


def check_prices(config: Config) -> None:
    """``ConfigError`` when a cap is set and a configured model has no known price."""
    if not caps_set(config):
        return
    missing = unpriced_models(config)
    if missing:
        model = missing[0]
        raise ConfigError(
            f"no price is known for model {model!r} and a budget cap is set: add a table "
            f'[prices."{model}"] with input and output (dollars per million tokens) to '
            "config.toml"
        )


def caps_set(config: Config) -> bool:
    budget = config.budget
    return bool(
        budget.per_conversation
        or budget.per_task
        or budget.per_day
        or budget.per_month
        or any(s.budget for s in config.schedules)
    )


class Budgeted(Protocol):
    """What a meter reads at each call: the config in force (a reload swaps it) and the time.
    The daemon's ``App`` is one; a command's root gives a :class:`ConfigClock`."""

    @property
    def config(self) -> Config: ...

    def now(self) -> datetime: ...


@dataclass(frozen=True)
class ConfigClock:
    """:class:`Budgeted` from two callables."""

    config_of: Callable[[], Config]
    now: Callable[[], datetime]

    @property
    def config(self) -> Config:
        return self.config_of()


@dataclass(frozen=True)
class _Open:
    spend_id: int | None  # None: no cap applies, so nothing was reserved
    model: str
    request_bytes: int
    shape: str | None


@dataclass(eq=False)
class CallMeter:
    """Reserves and settles the model calls of one attempt at one agent turn."""

    app: Budgeted
    spend: Spend
    place: SpendPlace
    gate: ApprovalGate | None = None  # None: a held call is not asked about (a title)
    shape: Callable[[], Hashable] | None = None  # what besides appended messages makes a prompt
    _open: _Open | None = field(default=None, init=False)
    _last: tuple[str, int, int] | None = field(default=None, init=False)
    _fixed: tuple[Any, Any, str] = field(default=(None, None, ""), init=False)
    _amounts: tuple[Any, dict[Any, int]] = field(default=(None, {}), init=False)

    def __post_init__(self) -> None:
        self.prices = PriceTable(self.app.config.prices)

    def prepare(self, system: Any, tools: Any) -> None:
        """The next call's system prompt and tools: a prompt's parts besides its messages.
        Their checksums go into its shape (each list is read once: they never change)."""
        kept_system, kept_tools, _ = self._fixed
        if system is kept_system and tools is kept_tools:
            return
        from .client import encode_json

        sums = (
            f"{zlib.crc32(encode_json(system).encode())}:{zlib.crc32(encode_json(tools).encode())}"
        )
        self._fixed = (system, tools, sums)

    def _shape(self) -> str | None:
        """What, besides the messages appended since, makes the prompt of the next call."""
        if self.shape is None:
            return None
        return f"{self.shape()}|{self._fixed[2]}"

    # -- before the call -------------------------------------------------------------------

    def reserve(self, model: str, max_tokens: int, request_bytes: int) -> None:
        """Store the call's reservation, or hold it: ``ApprovalWaiting`` while the person is
        asked, ``CapReached`` when they said no. Called with the encoded request's size."""
        config = self.app.config
        price = self.prices.get(model)
        shape = self._shape()
        if self._amounts[0] is not config:  # worked out once per config (a reload: again)
            self._amounts = (config, cap_amounts(config))
        while True:
            caps = caps_for(self._amounts[1], self.place, self.app.now())
            if not caps:  # nothing to hold the call to: its cost is stored with its reply
                self._open = _Open(None, model, request_bytes, shape)
                return
            if price is None:
                raise ModelError(
                    f"no price is known for model {model!r} and a budget cap is set: "
                    f'add a [prices."{model}"] table',
                    retryable=False,
                )
            if shape is not None and (self._last is None or self._last[0] != shape):
                found = self.spend.last_answered(self.place, shape)  # after a restart, say
                self._last = None if found is None else (shape, *found)
            bound = price.bound(self.prompt_bound(request_bytes, shape), max_tokens)
            reserved = self.spend.reserve(
                self.place,
                model=model,
                bound=bound,
                request_bytes=request_bytes,
                caps=caps,
                shape=shape,
            )
            if reserved.spend_id is not None:
                self._open = _Open(reserved.spend_id, model, request_bytes, shape)
                return
            assert reserved.held is not None
            self._held(reserved.held, bound)  # returns once the cap was raised

    def prompt_bound(self, request_bytes: int, shape: str | None = None) -> int:
        """At most how many prompt tokens a request of ``request_bytes`` bytes holds."""
        whole = request_bytes + PROMPT_MARGIN
        last = self._last
        if last is None or shape is None or last[0] != shape or request_bytes < last[1]:
            return whole
        return min(whole, last[2] + (request_bytes - last[1]) + APPENDED_MARGIN)

    def _held(self, use: CapUse, bound: int) -> None:
        """A cap holds the call: ask (or read the answer); return once it was raised."""
        gate, cap = self.gate, use.cap
        name = CAP_NAMES[cap.kind]
        if gate is None:
            raise CapReached(f"The {name} budget is reached.", f"{cap.kind.value} reached")
        raise_by = micros(self.app.config.budget.raise_by) or cap.amount
        call_id = f"budget:{cap.kind.value}:{cap.key}:{self.place.turn}:{use.limit}"
        block: dict[str, Any] = {
            "id": call_id,
            "name": BUDGET,
            "input": {
                "cap": cap.kind.value,
                "key": cap.key,
                "limit": use.limit,
                "spent": use.used,
                "call": bound,
                "raise_by": raise_by,
            },
        }
        approval = gate.approvals.for_call(gate.place.scope, call_id)
        if approval is None:
            approval = gate.ask(block, question=BUDGET)
        refused = gate.settled(approval)  # ApprovalWaiting while it waits
        if refused is None:  # approved: the cap goes up, once per approval
            amount = int(approval.input.get("raise_by", raise_by))
            if self.spend.raise_cap(approval.id, cap, amount):
                logger.info("the %s budget was raised by %s", name, dollars(amount, places=2))
            return
        spent, limit = dollars(use.used), dollars(use.limit, places=2)
        decided = gate.approvals.get(approval.id) or approval  # expired just now, maybe
        reply = (
            f"I stopped here: the {name} budget of {limit} is reached ({spent} spent), "
            f"and it was not raised ({_why(decided.status.value)})."
        )
        raise CapReached(reply, f"{cap.kind.value} budget of {limit} reached")

    # -- after the call --------------------------------------------------------------------

    def settle(self, reply: ModelReply, usage_id: int | None, db: sqlite3.Connection) -> None:
        """The response's real cost replaces its reservation (in the reply's transaction)."""
        opened, self._open = self._open, None
        cost = self.prices.cost(reply.model, reply.usage) if reply.model else None
        if cost is None and opened is not None:
            cost = self.prices.cost(opened.model, reply.usage)
        prompt = sum(_count(reply.usage, key) for key in PROMPT_KEYS)
        if opened is None or opened.spend_id is None:  # no reservation was made
            self.spend.record(
                self.place,
                model=reply.model,
                cost=cost,
                usage_id=usage_id,
                db=db,
                request_bytes=0 if opened is None else opened.request_bytes,
                shape=None if opened is None else opened.shape,
                prompt_tokens=prompt,
            )
        else:
            self.spend.settle(
                opened.spend_id, cost=cost, usage_id=usage_id, prompt_tokens=prompt, db=db
            )
        if opened is not None and opened.shape is not None:
            self._last = (opened.shape, opened.request_bytes, prompt)

    def cut(self) -> None:
        """The call was hung up mid-stream: it may have been billed, so its reservation stays
        at its bound, as a broken stream's does."""
        self._open = None

    def failed(self, error: ModelError) -> None:
        """The call failed: an HTTP error the API answered with was not billed, and lets its
        reservation go; a broken stream or connection may have been, and keeps it at its bound."""
        opened, self._open = self._open, None
        if opened is not None and opened.spend_id is not None and error.status is not None:
            self.spend.release(opened.spend_id)


def title_meters(app: Budgeted, spend: Spend) -> Callable[[Conversation, str], CallMeter]:
    """What a title's or summary's call reserves with: held to the same caps as the turns'
    (its conversation's, the day's, the month's), but never asked about."""

    def meter(conversation: Conversation, what: str) -> CallMeter:
        place = SpendPlace(what, conversation_id=conversation.id, channel=conversation.channel)
        return CallMeter(app, spend, place)

    return meter


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _why(status: str) -> str:
    return {
        "denied": "the person said no",
        "expired": "no answer in time",
        "answered": "the person answered with a message instead",
    }.get(status, status)


def approval_text(approval: Any) -> tuple[str, dict[str, Any]]:
    """The body and extra front matter of a budget approval's outbox item."""
    data = approval.input
    name = CAP_NAMES.get(CapKind(data["cap"]), data["cap"])
    limit, spent = dollars(data["limit"], places=2), dollars(data["spent"])
    raise_by = dollars(data["raise_by"], places=2)
    text = (
        f"The {name} budget holds the next model call: {spent} of {limit} is spent or "
        f"reserved, and the call could cost up to {dollars(data['call'])}.\n\n"
        f"Approve to raise the cap by {raise_by} and go on; deny to end the turn here. "
        f'Drop a file in the inbox with front matter `approve = "{approval.id}"` or '
        f'`deny = "{approval.id}"`, or run `smarthole approve {approval.id}` or '
        f"`smarthole deny {approval.id}`. A message of your own instead counts as a no. "
        f"No answer by {approval.as_dict()['expires']}: the turn ends."
    )
    extra = {
        "cap": data["cap"],
        "spent": as_dollars(data["spent"]),
        "limit": as_dollars(data["limit"]),
        "raise_by": as_dollars(data["raise_by"]),
    }
    return text, extra
