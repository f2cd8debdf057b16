"""CrawlJob state machine: every valid transition, and every invalid one refused
with nothing recorded."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from domain.crawl_job import MAX_INTERVAL_FACTOR, CrawlJob, RetryPolicy
from domain.errors import InvalidInput, InvalidTransition, LeaseLost
from domain.retry import NON_RETRYABLE_LIMIT
from domain.values import Origin

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HOUR = 3600


def make_job(*, interval: int | None = HOUR, max_attempts: int = 3, base: float = 60.0,
             cap: float = 3600.0, adaptive: bool = True,
             next_run_at: datetime = T0) -> CrawlJob:
    job = CrawlJob.schedule(
        kind="catalog", url="https://shop.example/menu", url_norm="https://shop.example/menu",
        store_id=None, interval=interval, priority=0,
        retry_policy=RetryPolicy(max_attempts=max_attempts, backoff_base=base, backoff_cap=cap),
        adaptive=adaptive, next_run_at=next_run_at, at=T0 - timedelta(days=1),
    )
    job.collect_events()
    return job


def names(job: CrawlJob) -> list[str]:
    """The pending events' names, collected (cleared) from the job."""
    return [type(e).__name__ for e in job.collect_events()]


def outcome(content_hash: str = "h1") -> dict[str, Any]:
    return {"http_status": 200, "pages": 1, "items": 0, "content_hash": content_hash}


def lease(job: CrawlJob, lease_id: str = "L1", now: datetime = T0, ttl: float = 300) -> None:
    job.lease("worker-1", lease_id, ttl, now)


# --- reaching every state -----------------------------------------------------

def in_state(state: str) -> CrawlJob:
    if state == "completed":
        job = make_job(interval=None)
        lease(job)
        job.succeed("L1", outcome(), [], T0)
    elif state == "dead":
        job = make_job(interval=None, max_attempts=1)
        lease(job)
        job.fail("L1", "http_4xx", "gone", False, None, T0)
    else:
        job = make_job()
        if state == "dispatched":
            job.dispatch(T0)
        elif state == "leased":
            lease(job)
        elif state == "paused":
            job.pause(T0)
        elif state == "cancelled":
            job.cancel(T0)
    job.collect_events()
    assert job.state == state
    return job


STATES = ("scheduled", "dispatched", "leased", "paused", "dead", "completed", "cancelled")
LATER = T0 + timedelta(hours=1)  # after the lease (ttl 300 s) ran out

COMMANDS: dict[str, Callable[[CrawlJob], None]] = {
    "dispatch": lambda j: j.dispatch(T0),
    "lease": lambda j: j.lease("worker-2", "L2", 300, T0),
    "extend": lambda j: j.extend_lease("L1", 300, T0),
    "succeed": lambda j: j.succeed("L1", outcome(), [], T0),
    "fail": lambda j: j.fail("L1", "timeout", "slow", True, None, T0),
    "expire": lambda j: j.expire_lease(LATER),
    "pause": lambda j: j.pause(T0),
    "resume": lambda j: j.resume(T0),
    "cancel": lambda j: j.cancel(T0),
    "retry": lambda j: j.retry(T0),
    "force_run": lambda j: j.force_run(T0),
    "reopen": lambda j: j.reopen_as_before(T0),
}

#: (state, command) -> the state it leaves the job in; absent pairs are refused.
VALID = {
    ("scheduled", "dispatch"): "dispatched",
    ("scheduled", "lease"): "leased",
    ("dispatched", "lease"): "leased",
    ("leased", "extend"): "leased",
    ("leased", "succeed"): "scheduled",
    ("leased", "fail"): "scheduled",
    ("leased", "expire"): "scheduled",
    ("scheduled", "pause"): "paused",
    ("paused", "resume"): "scheduled",
    ("scheduled", "cancel"): "cancelled",
    ("dispatched", "cancel"): "cancelled",
    ("leased", "cancel"): "cancelled",
    ("paused", "cancel"): "cancelled",
    ("dead", "retry"): "scheduled",
    # The code also accepts an operator retry of a scheduled job (e.g. one waiting in
    # backoff): it resets the attempts and makes it due now.
    ("scheduled", "retry"): "scheduled",
    ("scheduled", "force_run"): "scheduled",
    ("cancelled", "reopen"): "scheduled",
    ("completed", "reopen"): "scheduled",
    ("dead", "reopen"): "scheduled",
}
LEASE_COMMANDS = {"extend", "succeed", "fail"}
INVALID = [(s, c) for s in STATES for c in COMMANDS if (s, c) not in VALID]


@pytest.mark.parametrize(("state", "command"), sorted(VALID))
def test_valid_transition_records_events(state: str, command: str) -> None:
    job = in_state(state)
    version = job.version
    COMMANDS[command](job)
    assert job.state == VALID[(state, command)]
    assert job.pending_events and job.version > version


@pytest.mark.parametrize(("state", "command"), INVALID)
def test_invalid_transition_is_refused_and_records_nothing(state: str, command: str) -> None:
    job = in_state(state)
    before = (dict(vars(job)), job.version)
    expected = LeaseLost if command in LEASE_COMMANDS else InvalidTransition
    with pytest.raises(expected, match=str(job.id)) as refused:
        COMMANDS[command](job)
    assert state in str(refused.value)
    assert job.pending_events == []
    assert (dict(vars(job)), job.version) == before


# --- dispatch and lease ------------------------------------------------------------

def test_dispatch_only_when_due() -> None:
    job = make_job(next_run_at=T0 + timedelta(minutes=5))
    with pytest.raises(InvalidTransition, match="not due"):
        job.dispatch(T0)
    assert job.pending_events == []
    job.dispatch(T0 + timedelta(minutes=5))
    assert names(job) == ["Dispatched"]


def test_lease_of_scheduled_job_only_when_due() -> None:
    job = make_job(next_run_at=T0 + timedelta(minutes=5))
    with pytest.raises(InvalidTransition, match="not due"):
        lease(job)
    assert job.pending_events == [] and job.lease_id is None
    lease(job, now=T0 + timedelta(minutes=5))
    assert names(job) == ["Leased"]


def test_lease_sets_attempt_worker_and_expiry() -> None:
    job = make_job()
    job.dispatch(T0)
    lease(job, ttl=120)
    (leased,) = job.collect_events()[1:]
    assert (leased.worker, leased.lease_id, leased.attempt) == ("worker-1", "L1", 1)
    assert leased.expires_at == T0 + timedelta(seconds=120)
    assert (job.state, job.lease_id, job.attempt) == ("leased", "L1", 1)


@pytest.mark.parametrize("ttl", [0, 0.5, 86401])
def test_lease_ttl_out_of_range_is_refused(ttl: float) -> None:
    job = make_job()
    with pytest.raises(InvalidInput, match="ttl"):
        job.lease("w", "L1", ttl, T0)
    assert job.pending_events == [] and job.state == "scheduled"


def test_extend_only_the_current_lease() -> None:
    job = in_state("leased")
    with pytest.raises(LeaseLost, match="L0 is not current"):
        job.extend_lease("L0", 600, T0)
    assert job.pending_events == []
    job.extend_lease("L1", 600, T0 + timedelta(minutes=4))
    (extended,) = job.collect_events()
    assert type(extended).__name__ == "LeaseExtended"
    assert job.lease_expires_at == T0 + timedelta(minutes=14) == extended.expires_at


def test_result_for_a_stale_lease_is_refused() -> None:
    job = in_state("leased")
    job.expire_lease(LATER)
    job.collect_events()
    lease(job, "L2", now=LATER + timedelta(hours=1))
    job.collect_events()
    for record in (lambda: job.succeed("L1", outcome(), [], LATER),
                   lambda: job.fail("L1", "timeout", "x", True, None, LATER)):
        with pytest.raises(LeaseLost, match="L1 is not current"):
            record()
    assert job.pending_events == [] and job.lease_id == "L2"


# --- success ---------------------------------------------------------------------------

def test_success_of_recurring_job_reschedules_after_interval() -> None:
    job = in_state("leased")
    job.succeed("L1", outcome(), ["p1"], T0 + timedelta(seconds=30))
    events = job.collect_events()
    assert [type(e).__name__ for e in events] == ["Succeeded", "Rescheduled"]
    succeeded, rescheduled = events
    assert succeeded.lease_id == "L1" and succeeded.attempt == 1
    assert succeeded.outcome["changed"] is True
    assert rescheduled.next_run_at == T0 + timedelta(seconds=30 + HOUR)
    assert rescheduled.reason == "next run"
    assert (job.state, job.attempt, job.lease_id, job.runs) == ("scheduled", 0, None, 1)
    assert job.products == frozenset({"p1"}) and job.already_recorded("L1")


def test_success_of_one_shot_job_completes_it() -> None:
    job = make_job(interval=None)
    lease(job)
    job.collect_events()
    job.succeed("L1", outcome(), [], T0)
    assert names(job) == ["Succeeded", "Completed"]
    assert job.state == "completed" and job.lease_id is None


# --- failure, backoff, dead letters ------------------------------------------------------

def fail_attempt(job: CrawlJob, n: int, now: datetime, retryable: bool = True,
                 retry_after: float | None = None) -> list[Any]:
    lease(job, f"L{n}", now=now)
    job.collect_events()
    job.fail(f"L{n}", "http_5xx", "502", retryable, retry_after, now)
    return job.collect_events()


def test_failure_backoff_doubles_per_attempt_up_to_the_cap() -> None:
    job = make_job(max_attempts=6, base=60, cap=300)
    now, delays = T0, []
    for attempt in range(1, 6):
        failed, rescheduled = fail_attempt(job, attempt, now)
        assert type(failed).__name__ == "Failed" and failed.attempt == attempt
        assert type(rescheduled).__name__ == "Rescheduled"
        assert failed.retry_at == rescheduled.next_run_at == job.next_run_at
        assert rescheduled.reason == f"retry {attempt + 1} after http_5xx: 502"
        delays.append((job.next_run_at - now).total_seconds())
        now = job.next_run_at
    assert delays == [60, 120, 240, 300, 300]
    assert job.attempt == 5 and job.last_error == "http_5xx: 502"


@pytest.mark.parametrize(("retry_after", "delay"), [(500.0, 500), (10.0, 60), (None, 60)])
def test_retry_after_is_honoured_when_larger(retry_after: float | None, delay: int) -> None:
    job = make_job()
    fail_attempt(job, 1, T0, retry_after=retry_after)
    assert job.next_run_at == T0 + timedelta(seconds=delay)


def test_one_shot_failure_with_no_attempts_left_dead_letters() -> None:
    job = make_job(max_attempts=2, interval=None)
    fail_attempt(job, 1, T0)
    events = fail_attempt(job, 2, job.next_run_at)
    assert [type(e).__name__ for e in events] == ["Failed", "DeadLettered"]
    assert events[0].retry_at is None
    assert events[1].reason == "no attempts left after http_5xx: 502"
    assert job.state == "dead" and job.lease_id is None


def test_non_retryable_failure_dead_letters_a_one_shot_job_at_once() -> None:
    job = make_job(interval=None, max_attempts=5)
    events = fail_attempt(job, 1, T0, retryable=False)
    assert [type(e).__name__ for e in events] == ["Failed", "DeadLettered"]
    assert job.state == "dead" and job.attempt == 1


def test_recurring_job_survives_non_retryable_failures_until_the_limit_in_a_row() -> None:
    job = make_job(max_attempts=5)
    now = T0
    for n in range(1, NON_RETRYABLE_LIMIT):
        events = fail_attempt(job, n, now, retryable=False)
        assert [type(e).__name__ for e in events] == ["Failed", "RunAbandoned"]
        assert events[1].reason == (f"non-retryable http_5xx: 502 ({n} of {NON_RETRYABLE_LIMIT}"
                                    " in a row before dead-lettering); next regular run")
        assert job.state == "scheduled" and job.nonretryable_failures == n
        assert job.next_run_at == now + timedelta(seconds=HOUR) and job.attempt == 0
        now = job.next_run_at
    events = fail_attempt(job, NON_RETRYABLE_LIMIT, now, retryable=False)
    assert [type(e).__name__ for e in events] == ["Failed", "DeadLettered"]
    assert events[1].reason == (f"{NON_RETRYABLE_LIMIT} non-retryable failures in a row,"
                                " the last http_5xx: 502")
    assert job.state == "dead"


@pytest.mark.parametrize("between", ["success", "transient"])
def test_a_success_or_transient_failure_between_breaks_the_streak(between: str) -> None:
    job = make_job(max_attempts=1)
    now = T0
    for n in range(1, 3 * NON_RETRYABLE_LIMIT):
        if n % NON_RETRYABLE_LIMIT:
            fail_attempt(job, n, now, retryable=False)
        elif between == "success":
            lease(job, f"L{n}", now=now)
            job.succeed(f"L{n}", outcome(), [], now)
        else:
            fail_attempt(job, n, now, retryable=True)
        assert job.state == "scheduled", n
        now = job.next_run_at


def test_reopen_a_cancelled_job_with_new_settings_and_the_origin() -> None:
    job = in_state("cancelled")
    job.reopen(LATER, Origin("cli:ann@host", "cli", "store is back"), interval=2 * HOUR,
               priority=5, retry_policy=RetryPolicy(max_attempts=4), adaptive=False,
               next_run_at=LATER)
    (reopened,) = job.collect_events()
    assert type(reopened).__name__ == "Reopened"
    assert (reopened.actor, reopened.surface, reopened.reason) == ("cli:ann@host", "cli",
                                                                   "store is back")
    assert (job.state, job.interval, job.base_interval, job.priority) == ("scheduled",
                                                                          2 * HOUR, 2 * HOUR, 5)
    assert job.policy.max_attempts == 4 and not job.adaptive and job.is_due(LATER)
    lease(job, "L9", now=LATER)
    assert job.attempt == 1


def test_reopen_refuses_bad_settings_and_records_nothing() -> None:
    job = in_state("completed")
    with pytest.raises(InvalidInput, match="interval"):
        job.reopen(T0, interval=5, priority=0, retry_policy=RetryPolicy(), adaptive=True,
                   next_run_at=T0)
    assert job.pending_events == [] and job.state == "completed"


def test_recurring_job_outlives_a_transient_cause_its_next_run_is_due() -> None:
    job = make_job(max_attempts=2)
    fail_attempt(job, 1, T0)
    now = job.next_run_at
    events = fail_attempt(job, 2, now)
    assert [type(e).__name__ for e in events] == ["Failed", "RunAbandoned"]
    assert events[1].reason == "attempts exhausted after http_5xx: 502; next regular run"
    assert job.state == "scheduled" and job.attempt == 0
    assert job.next_run_at == now + timedelta(seconds=HOUR)
    lease(job, "L3", now=job.next_run_at)
    assert job.attempt == 1  # the next run starts its attempts afresh


def test_recurring_job_with_one_attempt_never_dies_of_a_transient_cause() -> None:
    job = make_job(max_attempts=1)
    events = fail_attempt(job, 1, T0)
    assert [type(e).__name__ for e in events] == ["Failed", "RunAbandoned"]
    assert job.state == "scheduled"


def test_a_page_that_had_products_and_now_has_none_is_retried() -> None:
    job = make_job(interval=HOUR)
    lease(job, "L0")
    job.succeed("L0", outcome(), ["product-1"], T0)
    lease(job, "L1", now=job.next_run_at)
    job.collect_events()
    job.fail("L1", "no_products", "none found", False, None, job.next_run_at)
    failed, rescheduled = job.collect_events()
    assert failed.retryable and type(rescheduled).__name__ == "Rescheduled"
    fresh = make_job(interval=None)
    lease(fresh, "L1")
    fresh.fail("L1", "no_products", "none found", False, None, T0)
    assert names(fresh)[-1] == "DeadLettered"  # never had any: no retry helps


# --- lease expiry -------------------------------------------------------------------

def test_lease_expires_only_after_its_expiry() -> None:
    job = in_state("leased")
    with pytest.raises(InvalidTransition, match="not expired"):
        job.expire_lease(T0 + timedelta(seconds=299))
    assert job.pending_events == [] and job.state == "leased"
    job.expire_lease(T0 + timedelta(seconds=300))
    expired, rescheduled = job.collect_events()
    assert type(expired).__name__ == "LeaseExpired" and expired.lease_id == "L1"
    assert rescheduled.next_run_at == T0 + timedelta(seconds=360)
    assert "lease expired" in rescheduled.reason
    assert job.state == "scheduled" and job.lease_id is None


def test_expired_lease_counts_as_a_failed_attempt() -> None:
    job = make_job(max_attempts=2, interval=None)
    lease(job, "L1")
    job.expire_lease(LATER)
    lease(job, "L2", now=job.next_run_at)
    assert job.attempt == 2
    job.expire_lease(job.lease_expires_at)
    assert names(job)[-2:] == ["LeaseExpired", "DeadLettered"]
    assert job.state == "dead"


# --- operator commands ----------------------------------------------------------------

def test_pause_and_resume_keeps_the_later_next_run() -> None:
    job = make_job(next_run_at=T0 + timedelta(hours=2))
    job.pause(T0)
    job.resume(T0 + timedelta(hours=1))
    assert job.next_run_at == T0 + timedelta(hours=2)
    job.pause(T0 + timedelta(hours=1))
    job.resume(T0 + timedelta(hours=3))
    assert job.next_run_at == T0 + timedelta(hours=3)
    assert names(job) == ["Paused", "Resumed", "Paused", "Resumed"]


def test_cancel_of_leased_job_ends_the_lease() -> None:
    job = in_state("leased")
    job.cancel(T0)
    assert names(job) == ["Cancelled"]
    assert job.state == "cancelled" and job.lease_id is None and job.worker is None


def test_retry_of_dead_job_resets_attempts_and_runs_now() -> None:
    job = make_job(max_attempts=1, interval=None)
    fail_attempt(job, 1, T0)
    assert job.state == "dead"
    job.retry(T0 + timedelta(days=1))
    assert names(job) == ["RetryRequested"]
    assert (job.state, job.attempt, job.next_run_at) == ("scheduled", 0, T0 + timedelta(days=1))
    lease(job, "L2", now=T0 + timedelta(days=1))
    assert job.attempt == 1


def test_force_run_makes_job_due_now_with_a_boost_until_its_run_ends() -> None:
    job = make_job(next_run_at=T0 + timedelta(days=1))
    job.force_run(T0)
    (forced,) = job.collect_events()
    assert type(forced).__name__ == "ForceRunRequested" and forced.boost == 100
    assert job.is_due(T0) and job.boost == 100
    lease(job)
    job.succeed("L1", outcome(), [], T0)
    assert job.boost == 0


# --- adaptive interval -----------------------------------------------------------------

def run_once(job: CrawlJob, n: int, content_hash: str) -> list[Any]:
    now = job.next_run_at
    lease(job, f"L{n}", now=now)
    job.collect_events()
    job.succeed(f"L{n}", outcome(content_hash), [], now)
    return job.collect_events()


def test_unchanged_content_doubles_interval_up_to_the_cap_and_change_resets() -> None:
    job = make_job(interval=HOUR)
    assert [type(e).__name__ for e in run_once(job, 1, "a")] == ["Succeeded", "Rescheduled"]
    seen = []
    for n in range(2, 7):
        events = run_once(job, n, "a")
        adapted = [e for e in events if type(e).__name__ == "IntervalAdapted"]
        seen.append((adapted[0].interval, adapted[0].reason) if adapted else None)
        assert events[-1].next_run_at - events[-1].at == timedelta(seconds=job.interval)
    assert seen == [
        (2 * HOUR, "content unchanged: 3600s doubled to 7200s"),
        (4 * HOUR, "content unchanged: 7200s doubled to 14400s"),
        (8 * HOUR, "content unchanged: 14400s doubled to 28800s"),
        None, None,
    ]
    assert job.interval == MAX_INTERVAL_FACTOR * HOUR
    events = run_once(job, 7, "b")
    assert [type(e).__name__ for e in events] == ["Succeeded", "IntervalAdapted", "Rescheduled"]
    assert events[0].outcome["changed"] is True
    assert (events[1].interval, events[1].reason) == (HOUR, "content changed: reset to 3600s")
    assert job.interval == HOUR


def test_fixed_interval_when_not_adaptive() -> None:
    job = make_job(adaptive=False)
    for n in range(1, 4):
        assert "IntervalAdapted" not in [type(e).__name__ for e in run_once(job, n, "same")]
    assert job.interval == HOUR


# --- scheduling validation --------------------------------------------------------------

@pytest.mark.parametrize(("change", "message"), [
    ({"kind": "nope"}, "unknown job kind"),
    ({"interval": 59}, "interval"),
    ({"interval": 90 * 86400 + 1}, "interval"),
    ({"priority": 1001}, "priority"),
])
def test_schedule_validates_its_input(change: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {
        "kind": "catalog", "url": "https://a.example/", "url_norm": "https://a.example/",
        "store_id": None, "interval": HOUR, "priority": 0, "retry_policy": RetryPolicy(),
        "adaptive": True, "next_run_at": T0, "at": T0,
    }
    with pytest.raises(InvalidInput, match=message):
        CrawlJob.schedule(**(args | change))


@pytest.mark.parametrize("args", [(0, 60, 3600), (101, 60, 3600), (3, -1, 10), (3, 100, 50)])
def test_retry_policy_validates(args: tuple[int, float, float]) -> None:
    with pytest.raises(InvalidInput):
        RetryPolicy(*args)


def test_job_id_is_derived_from_kind_and_normalised_url() -> None:
    assert make_job().id == make_job(interval=None).id
    assert CrawlJob.create_id("feed", "https://shop.example/menu") != make_job().id
