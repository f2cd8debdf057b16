"""Random command sequences on one CrawlJob: refused commands change nothing, the
invariants hold after every step, and replaying the events rebuilds the same job."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from domain.application import CrawlLedger
from domain.crawl_job import TERMINAL, CrawlJob, RetryPolicy
from domain.errors import InvalidTransition, LeaseLost
from eventstore import SQLiteBackend

T0 = datetime(2026, 3, 1, tzinfo=UTC)
STABLE = {"scheduled", "dispatched", "leased", "paused", "dead", "completed", "cancelled"}


def public_state(job: CrawlJob) -> dict[str, Any]:
    """The job's state without the library's private bookkeeping (pending events …)."""
    state = {k: v for k, v in vars(job).items() if not k.startswith("_")}
    return state | {"id": job.id, "version": job.version}


class CrawlJobMachine(RuleBasedStateMachine):
    @initialize(one_shot=st.booleans(), max_attempts=st.integers(1, 4),
                adaptive=st.booleans())
    def schedule(self, one_shot: bool, max_attempts: int, adaptive: bool) -> None:
        self.now = T0
        self.job = CrawlJob.schedule(
            kind="catalog", url="https://s.example/", url_norm="https://s.example/",
            store_id=None, interval=None if one_shot else 600, priority=0,
            retry_policy=RetryPolicy(max_attempts, 30.0, 300.0), adaptive=adaptive,
            next_run_at=T0, at=T0,
        )
        self.events = list(self.job.collect_events())
        self.leases = 0
        self.terminal: str | None = None
        self.max_attempts = max_attempts

    def attempt(self, command: Callable[[], None], allowed: bool) -> None:
        """Run one command; it must succeed iff the model allows it, else change nothing."""
        before = public_state(self.job)
        try:
            command()
        except (InvalidTransition, LeaseLost):
            assert not allowed, f"refused a valid command in state {before['state']}"
            assert self.job.pending_events == []
            assert public_state(self.job) == before
            return
        assert allowed, f"accepted an invalid command in state {before['state']}"
        new = self.job.collect_events()
        assert new, "an accepted command must record at least one event"
        self.events.extend(new)

    # time ------------------------------------------------------------------------
    @rule(seconds=st.integers(0, 2000))
    def advance(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    # the run -----------------------------------------------------------------------
    @rule()
    def dispatch(self) -> None:
        self.attempt(lambda: self.job.dispatch(self.now), self.job.is_due(self.now))

    @rule(ttl=st.integers(1, 900))
    def lease(self, ttl: int) -> None:
        self.leases += 1
        lease_id = f"L{self.leases}"
        allowed = self.job.is_due(self.now) or self.job.state == "dispatched"
        self.attempt(lambda: self.job.lease("w", lease_id, ttl, self.now), allowed)

    def lease_id(self, current: bool) -> str:
        return (self.job.lease_id or "none") if current else f"L{self.leases + 1000}"

    @rule(current=st.booleans(), ttl=st.integers(1, 900))
    def extend(self, current: bool, ttl: int) -> None:
        lease_id = self.lease_id(current)
        self.attempt(lambda: self.job.extend_lease(lease_id, ttl, self.now),
                     self.job.state == "leased" and current)

    @rule(current=st.booleans(), content=st.sampled_from(["a", "b"]))
    def succeed(self, current: bool, content: str) -> None:
        lease_id = self.lease_id(current)
        outcome = {"http_status": 200, "content_hash": content}
        self.attempt(lambda: self.job.succeed(lease_id, outcome, [content], self.now),
                     self.job.state == "leased" and current)

    @rule(current=st.booleans(), retryable=st.booleans(),
          retry_after=st.none() | st.floats(0, 1000))
    def fail(self, current: bool, retryable: bool, retry_after: float | None) -> None:
        lease_id = self.lease_id(current)
        self.attempt(
            lambda: self.job.fail(lease_id, "timeout", "t", retryable, retry_after, self.now),
            self.job.state == "leased" and current)

    @rule()
    def expire(self) -> None:
        expires = self.job.lease_expires_at
        allowed = self.job.state == "leased" and expires is not None and expires <= self.now
        self.attempt(lambda: self.job.expire_lease(self.now), allowed)

    # the operator ---------------------------------------------------------------------
    @rule()
    def pause(self) -> None:
        self.attempt(lambda: self.job.pause(self.now), self.job.state == "scheduled")

    @rule()
    def resume(self) -> None:
        self.attempt(lambda: self.job.resume(self.now), self.job.state == "paused")

    @rule()
    def cancel(self) -> None:
        allowed = self.job.state in {"scheduled", "dispatched", "leased", "paused"}
        self.attempt(lambda: self.job.cancel(self.now), allowed)

    @rule()
    def retry(self) -> None:
        self.attempt(lambda: self.job.retry(self.now), self.job.state in {"dead", "scheduled"})

    @rule()
    def reopen(self) -> None:
        allowed = self.job.state in {"cancelled", "completed", "dead"}
        self.attempt(lambda: self.job.reopen_as_before(self.now), allowed)
        if allowed:
            self.terminal = None  # stopped for good until an operator reopens it

    @rule()
    def force_run(self) -> None:
        self.attempt(lambda: self.job.force_run(self.now), self.job.state == "scheduled")

    # invariants --------------------------------------------------------------------------
    @invariant()
    def one_lease_at_most_and_only_while_leased(self) -> None:
        assert self.job.state in STABLE
        assert (self.job.lease_id is not None) == (self.job.state == "leased")
        assert (self.job.lease_expires_at is not None) == (self.job.state == "leased")

    @invariant()
    def attempts_within_policy(self) -> None:
        assert 0 <= self.job.attempt <= self.max_attempts

    @invariant()
    def terminal_states_stay_terminal(self) -> None:
        if self.terminal is not None:
            assert self.job.state == self.terminal
        elif self.job.state in TERMINAL:
            self.terminal = self.job.state

    @invariant()
    def events_replay_to_the_same_state(self) -> None:
        replayed = None
        for stored in self.events:
            replayed = stored.mutate(replayed)
        assert isinstance(replayed, CrawlJob)
        assert public_state(replayed) == public_state(self.job)

    def teardown(self) -> None:
        # Round trip through a real event store too (transcoding of every payload).
        app = CrawlLedger(SQLiteBackend(Path(":memory:")))
        try:
            app.events.put(self.events)
            loaded = app.repository.get(self.job.id)
            assert public_state(loaded) == public_state(self.job)
        finally:
            app.close()


CrawlJobMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestCrawlJobStateMachine = CrawlJobMachine.TestCase
